package config

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDefault(t *testing.T) {
	c, err := Parse(defaultFile, DefaultTOML())
	if err != nil {
		t.Fatalf("embedded default is invalid:\n%v", err)
	}
	if c.Platform != "qemu" || c.Management.Port != "MGMT" || !c.Management.DHCP {
		t.Errorf("default platform/management = %q/%+v, want qemu, DHCP on MGMT", c.Platform, c.Management)
	}
	if want := []Segment{{Name: "seg1", Ports: []string{"LAN1", "LAN2"}, Bypass: "pair1", MTU: DefaultMTU}}; !reflect.DeepEqual(c.Segments, want) {
		t.Errorf("default segments = %+v, want %+v", c.Segments, want)
	}
	if !slices.Equal(c.Services, defaultServices) {
		t.Errorf("default services = %v, want %v", c.Services, defaultServices)
	}
	if p := c.Profile(); p == nil || p.Name != "qemu" {
		t.Errorf("Profile() = %v, want qemu", p)
	}

	// Default hands out independent copies.
	a, b := Default(), Default()
	a.Services[0] = "changed"
	a.Segments[0].Ports[0] = "changed"
	if b.Services[0] != defaultServices[0] || b.Segments[0].Ports[0] != "LAN1" {
		t.Error("Default() copies share memory")
	}
	DefaultTOML()[0] = 'X'
	if DefaultTOML()[0] == 'X' {
		t.Error("DefaultTOML() exposes the embedded bytes")
	}
}

// The default file spells out every field with its default value, so that it
// documents the defaults: apart from its example segment it must decode to
// exactly what an empty file gets.
func TestDefaultFileMatchesFieldDefaults(t *testing.T) {
	empty, err := Parse("empty.toml", []byte(`services = ["statusd"]`))
	if err != nil {
		t.Fatal(err)
	}
	def := Default()
	def.Segments = nil
	def.Services = []string{"statusd"}
	if !reflect.DeepEqual(empty, def) {
		t.Errorf("empty file decodes to\n%+v\nbut default.toml to\n%+v", empty, def)
	}
	// Every schema key appears in the default file, uncommented.
	src := &source{data: DefaultTOML()}
	for _, path := range schemaPaths(reflect.TypeFor[Config](), "") {
		if strings.HasPrefix(path, "selftest.ports[0].") || strings.HasPrefix(path, "snmp.user[0].") || strings.HasPrefix(path, "snmp.trap[0].") || strings.HasPrefix(path, "auth.radius[0].") {
			continue // no default: the example is a comment
		}
		if _, ok := src.locator().lines[path]; !ok {
			t.Errorf("default.toml does not show %s", path)
		}
	}
	// services comes before the first table, as a top-level key must.
	if l, m := src.line("services"), src.line("management"); l > m {
		t.Errorf("services at line %d after [management] at %d", l, m)
	}
}

// schemaPaths lists the field paths of t, using index 0 for arrays of tables.
func schemaPaths(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		key := fieldKey(f)
		if key == "" {
			continue
		}
		p := joinPath(prefix, key)
		out = append(out, p)
		if st := structType(f.Type); st != nil {
			if f.Type.Kind() == reflect.Slice {
				p = indexPath(p, 0)
			}
			out = append(out, schemaPaths(st, p)...)
		}
	}
	return out
}

func TestMinimal(t *testing.T) {
	text := "platform = \"generic\"\n[[segment]]\nname = \"wan\"\nports = [\"LAN1\", \"LAN2\"]\n"
	c, err := Parse("min.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if c.Hostname != "ncpos" || c.Status.Port != 443 || c.Status.HTTPPort != 80 || c.Watchdog.Timeout.Duration != 30*time.Second ||
		c.Watchdog.Interval.Duration != 5*time.Second || c.Watchdog.BootGrace.Duration != 120*time.Second ||
		c.Forwarder.Engine != "xdp" || c.Forwarder.Mode != "forward" || c.Forwarder.FlowTableSize != 1000000 ||
		c.Watchdog.Device != "/dev/watchdog" || !c.Management.DHCP || c.Management.Port != "MGMT" ||
		!slices.Equal(c.Services, defaultServices) {
		t.Errorf("defaults not filled: %+v", c)
	}
	if c.Profile().Name != "generic" {
		t.Errorf("Profile() = %q, want generic", c.Profile().Name)
	}
}

func TestDependentDefaults(t *testing.T) {
	// A static address without dhcp means dhcp = false.
	c, err := Parse("s.toml", []byte("[management]\naddress = \"192.0.2.10/24\"\ngateway = \"192.0.2.1\"\n"+seg))
	if err != nil {
		t.Fatal(err)
	}
	if c.Management.DHCP {
		t.Error("dhcp = true with a static address, want false")
	}
	// Explicit zero values are kept, not replaced by defaults.
	c, err = Parse("z.toml", []byte("[forwarder]\ncores = 0\n[status]\nauth_read = false\n"+seg))
	if err != nil || c.Forwarder.Cores != 0 {
		t.Errorf("Parse = %+v, %v", c, err)
	}
	// An explicit empty services list is kept.
	c, err = Parse("e.toml", []byte("services = []\n"))
	if err != nil || len(c.Services) != 0 {
		t.Errorf("services = [] gave %v, %v", c, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"syntax", "hostname = \"a\"\nplatform = \n", []string{
			`ncpos.toml:2: invalid TOML: unexpected character '\n' at start of value`}},
		{"unterminated string", "hostname = \"a\n", []string{
			`ncpos.toml:1: invalid TOML: basic strings cannot have new lines`}},
		{"duplicate key", "hostname = \"a\"\nhostname = \"b\"\n", []string{
			`ncpos.toml:2: invalid TOML: key hostname is already defined`}},
		{"unknown top-level key", "hostname = \"a\"\nhost = \"b\"\n" + seg, []string{
			`ncpos.toml:2: host: unknown key, want one of hostname, platform, services, management, status, watchdog, forwarder, bypass, segment, syslog, snmp, selftest, auth, time`}},
		{"unknown table", "[bogus]\nx = 1\ny = 2\n" + seg, []string{
			`ncpos.toml:1: bogus: unknown key, want one of hostname, platform, services, management, status, watchdog, forwarder, bypass, segment, syslog, snmp, selftest, auth, time`}},
		{"unknown key in each segment", "[[segment]]\nname = \"a\"\nports = [\"LAN1\", \"LAN2\"]\nbypas = \"pair1\"\n" +
			"[[segment]]\nname = \"b\"\nports = [\"LAN3\", \"LAN4\"]\nbypas = \"pair2\"\n", []string{
			`ncpos.toml:4: segment[0].bypas: unknown key, want one of name, ports, bypass, mtu`,
			`ncpos.toml:8: segment[1].bypas: unknown key, want one of name, ports, bypass, mtu`}},
		{"wrong case is unknown", "[watchdog]\nTimeout = \"10s\"\n" + seg, []string{
			`ncpos.toml:2: watchdog.Timeout: unknown key, want one of device, timeout, interval, boot_grace`}},
		{"dotted unknown key", "[status]\nextra.deep = 1\n" + seg, []string{
			`ncpos.toml:2: status.extra: unknown key, want one of port, http_port, auth_read, password, password_hash, names`}},
		{"type errors, all of them", "hostname = 7\n[status]\nport = \"80\"\nauth_read = \"yes\"\n[watchdog]\ntimeout = 30\ninterval = \"5 s\"\n" +
			"[[segment]]\nname = \"a\"\nports = [\"LAN1\", 2]\n", []string{
			`ncpos.toml:1: hostname: got integer 7, want a string`,
			`ncpos.toml:3: status.port: got string "80", want an integer`,
			`ncpos.toml:4: status.auth_read: got string "yes", want true or false`,
			`ncpos.toml:6: watchdog.timeout: got integer 30, want a duration string such as "30s"`,
			`ncpos.toml:7: watchdog.interval: invalid duration "5 s", want a Go duration such as "30s" or "1m30s"`,
			`ncpos.toml:10: segment[0].ports[1]: got integer 2, want a string`}},
		{"table where value expected", "hostname = { a = 1 }\nsegment = 3\nservices = \"statusd\"\n", []string{
			`ncpos.toml:1: hostname: got a table, want a string`,
			`ncpos.toml:2: segment: got integer 3, want an array`,
			`ncpos.toml:3: services: got string "statusd", want an array`}},
		{"value where table expected", "management = 1\n", []string{
			`ncpos.toml:1: management: got integer 1, want a table`,
			`ncpos.toml:1: segment: no segments, want at least one [[segment]] with two ports for forwarderd to bridge`}},
		{"float for integer", "[status]\nport = 80.0\n", []string{
			`ncpos.toml:1: segment: no segments, want at least one [[segment]] with two ports for forwarderd to bridge`,
			`ncpos.toml:2: status.port: got float 80, want an integer`}},
		{"a type error hides no other problem", "[status]\nport = \"x\"\nhttp_port = -5\n" +
			"[watchdog]\ntimeout = 30\ninterval = \"1h\"\n" + seg, []string{
			`ncpos.toml:2: status.port: got string "x", want an integer`,
			`ncpos.toml:3: status.http_port: -5 is out of range, want 1..65535, or 0 for no plain HTTP redirect`,
			`ncpos.toml:5: watchdog.timeout: got integer 30, want a duration string such as "30s"`,
			`ncpos.toml:6: watchdog.interval: "3600s" is too long for timeout "30s", want less than 15s (half the timeout)`}},
		{"bypass hold-downs out of range", "[bypass]\nhold_down = \"-1s\"\nstart_hold_down = \"0s\"\n" + seg, []string{
			`ncpos.toml:2: bypass.hold_down: "-1s" is out of range, want between 0s and 1h`,
			`ncpos.toml:3: bypass.start_hold_down: "0s" is out of range, want more than 0s and at most 1h`}},
		{"a type error and an unknown key", "[status]\nport = \"x\"\nprot = 1\n" + seg, []string{
			`ncpos.toml:2: status.port: got string "x", want an integer`,
			`ncpos.toml:3: status.prot: unknown key, want one of port, http_port, auth_read, password, password_hash, names`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := problems(t, tt.text)
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestTOMLRoundTrip(t *testing.T) {
	c := Default()
	c.Management = Management{Port: "MGMT", Address: "192.0.2.10/24", Gateway: "192.0.2.1",
		IPv6: IPv6Static, Address6: "2001:db8::10/64", Gateway6: "fe80::1", DNS: []string{"192.0.2.53", "2001:db8::53"}}
	c.Watchdog.Interval = Duration{1500 * time.Millisecond}
	c.Segments = append(c.Segments, Segment{Name: "seg2", Ports: []string{"LAN3", "LAN4"}, Bypass: "pair2", MTU: 9000})
	b, err := c.TOML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("written.toml", b)
	if err != nil {
		t.Fatalf("written config does not parse:\n%v\n%s", err, b)
	}
	if !reflect.DeepEqual(back, c) {
		t.Errorf("round trip changed the config:\n%+v\nwant\n%+v", back, c)
	}
	if !bytes.Contains(b, []byte(`boot_grace = "120s"`)) {
		t.Errorf("TOML() writes boot_grace as\n%s\nwant \"120s\"", b)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "ncpos.toml")
	if err := os.WriteFile(good, DefaultTOML(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(good); err != nil {
		t.Errorf("Load(default) = %v", err)
	}

	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[status]\nport = 0\n"+seg), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(bad)
	if want := bad + ":2: status.port: 0 is out of range, want 1..65535"; err == nil || err.Error() != want {
		t.Errorf("Load(bad) = %v, want %s", err, want)
	}

	_, err = Load(filepath.Join(dir, "missing.toml"))
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "missing.toml") {
		t.Errorf("Load(missing) = %v, want a not-exist error naming the file", err)
	}
}

// A password hash cheaper than the ones ncpos makes is refused.
func TestCheapPasswordHash(t *testing.T) {
	got := problems(t, "[status]\npassword_hash = \"$2a$04$abcdefghijklmnopqrstuu5KYKLKWWBONSvQGdJf0zwnwPFZkv7wC\"\n"+seg)
	want := []string{`ncpos.toml:2: status.password_hash: a bcrypt hash of cost 4, want at least 10, the cost ncpos hashes with`}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
