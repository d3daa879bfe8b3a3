package console

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/config"
)

type fakeBox struct {
	m       config.Management
	applied []string
	reset   int
	factory []bool
	reboots int
}

func (b *fakeBox) About() About {
	return About{Hostname: "fw1", Build: "b7", Fingerprint: "sha256:abc", Port: "MGMT", Interface: "eth0",
		Addresses: []string{"10.0.2.15/24", "2001:db8::5/64", "fe80::1/64"}}
}
func (b *fakeBox) Management() (config.Management, error) { return b.m, nil }
func (b *fakeBox) SetManagement(_ context.Context, m config.Management, dev string) (string, error) {
	if m.Gateway == "10.9.9.9" {
		return "", fmt.Errorf("management.gateway: 10.9.9.9 is outside 192.0.2.10/24")
	}
	b.m = m
	b.applied = append(b.applied, dev+": "+describe(m))
	return fmt.Sprintf("Version %d applied and confirmed.", len(b.applied)+1), nil
}
func (b *fakeBox) ResetPassword(string) (string, error) { b.reset++; return "new-long-password-1", nil }
func (b *fakeBox) FactoryReset(_ string, newKey bool) error {
	b.factory = append(b.factory, newKey)
	return nil
}
func (b *fakeBox) Reboot(string) error { b.reboots++; return nil }

// run types lines into a menu and returns what it printed.
func run(t *testing.T, b *fakeBox, lines ...string) string {
	t.Helper()
	var out bytes.Buffer
	rw := struct {
		io.Reader
		io.Writer
	}{strings.NewReader(strings.Join(lines, "\n") + "\n"), &out}
	m := &Menu{Box: b, Device: "ttyS0"}
	if err := m.Serve(context.Background(), rw); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestMenu(t *testing.T) {
	b := &fakeBox{m: config.Management{Port: "MGMT", DHCP: true, IPv6: config.IPv6Slaac}}
	out := run(t, b, "", "2", "192.0.2.10/24", "192.0.2.1", "y", "0")
	for _, want := range []string{"ncpos fw1, build b7", "TLS key sha256:abc", "MGMT (eth0): 10.0.2.15/24, 2001:db8::5/64, fe80::1/64",
		"https://10.0.2.15/", "https://[2001:db8::5]/", "New management setup: IPv4 192.0.2.10/24 via 192.0.2.1, IPv6 slaac",
		"Version 2 applied and confirmed."} {
		if !strings.Contains(out, want) {
			t.Errorf("the menu does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "https://[fe80::1]/") {
		t.Errorf("the menu offers a link-local address as a URL")
	}
	if len(b.applied) != 1 || b.applied[0] != "ttyS0: IPv4 192.0.2.10/24 via 192.0.2.1, IPv6 slaac" {
		t.Errorf("applied %q", b.applied)
	}

	// IPv6 static, then DHCP back; a refusal is shown and changes nothing.
	run(t, b, "", "3", "static", "2001:db8::10/64", "fe80::1", "y", "1", "y", "0")
	if b.m.IPv6 != config.IPv6Static || b.m.Address6 != "2001:db8::10/64" || !b.m.DHCP || b.m.Address != "" {
		t.Errorf("after IPv6 static and DHCP: %+v", b.m)
	}
	out = run(t, b, "", "2", "192.0.2.10/24", "10.9.9.9", "y", "2", "10.0.0.1", "0")
	if !strings.Contains(out, "Not applied: management.gateway: 10.9.9.9 is outside 192.0.2.10/24") || !strings.Contains(out, `"10.0.0.1" is not an IPv4 address with a prefix length.`) || len(b.applied) != 3 {
		t.Errorf("refusals:\n%s\napplied %q", out, b.applied)
	}
	// Declined: nothing applied.
	run(t, b, "", "1", "n", "0")
	if len(b.applied) != 3 {
		t.Errorf("a declined change was applied: %q", b.applied)
	}

	out = run(t, b, "", "4", "y", "0")
	if b.reset != 1 || !strings.Contains(out, "    new-long-password-1") {
		t.Errorf("password reset %d times:\n%s", b.reset, out)
	}
	run(t, b, "", "5", "y", "n")
	run(t, b, "", "5", "n")
	if len(b.factory) != 1 || b.factory[0] {
		t.Errorf("factory resets %v, want one keeping the key", b.factory)
	}
	run(t, b, "", "6", "y")
	if b.reboots != 1 {
		t.Errorf("reboots: %d", b.reboots)
	}
	if out := run(t, b, "", "9", "0"); !strings.Contains(out, `"9" is not a choice.`) {
		t.Errorf("a wrong choice:\n%s", out)
	}
}
