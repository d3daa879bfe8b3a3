package vm

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/web/api"
)

// serialConsole is the box's serial port seen through its cable: what is
// typed goes in, what the box prints comes out.
type serialConsole struct {
	t    *testing.T
	conn net.Conn
	seen strings.Builder // everything read so far
	read int             // how much of seen the last expect consumed
}

func dialConsole(t *testing.T, sock string) *serialConsole {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("the serial port's socket: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return &serialConsole{t: t, conn: c}
}

// typeLine types s and Enter.
func (c *serialConsole) typeLine(s string) {
	c.t.Helper()
	if _, err := c.conn.Write([]byte(s + "\r")); err != nil {
		c.t.Fatalf("typing %q: %v", s, err)
	}
}

// expect reads until the box has printed want since the last expect, and
// returns what it printed up to and with it.
func (c *serialConsole) expect(want string, within time.Duration) string {
	c.t.Helper()
	buf := make([]byte, 4096)
	deadline := time.Now().Add(within)
	for {
		if i := strings.Index(c.seen.String()[c.read:], want); i >= 0 {
			out := c.seen.String()[c.read : c.read+i+len(want)]
			c.read += i + len(want)
			return out
		}
		c.conn.SetReadDeadline(deadline)
		n, err := c.conn.Read(buf)
		c.seen.Write(buf[:n])
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				c.t.Fatalf("the console did not print %q within %v; it printed:\n%s", want, within, c.seen.String()[c.read:])
			}
			c.t.Fatalf("reading the console: %v", err)
		}
	}
}

// TestConsoleMenu types into the box's serial console as a technician
// with a console cable would: Enter shows the menu with the box's
// address and TLS key; a static address set there is applied through the
// configuration path, by "console", and the box answers on it; a
// password reset prints a new password that the API then takes, and the
// old one no longer.
func TestConsoleMenu(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	img := testImage(t, "default", config.DefaultTOML())
	sock := filepath.Join(t.TempDir(), "ttyS0")
	v, _ := boot(t, img, false, func(o *Options) { o.SerialSocket = sock })
	fpr, err := v.Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	con := dialConsole(t, sock)
	con.typeLine("")
	shown := con.expect("Choice: ", v.Within(30*time.Second))
	for _, want := range []string{"TLS key " + fpr, "MGMT (eth0): 10.0.2.15/24", "https://10.0.2.15/", "2) Management IPv4 static address"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the menu does not show %q:\n%s", want, shown)
		}
	}

	con.typeLine("2")
	con.expect("prefix length", v.Within(10*time.Second))
	con.typeLine("10.0.2.15/24")
	con.expect("Default gateway", v.Within(10*time.Second))
	con.typeLine("10.0.2.2")
	con.expect("Apply it? [y/N] ", v.Within(10*time.Second))
	con.typeLine("y")
	said := con.expect("Choice: ", v.Within(time.Minute))
	if !strings.Contains(said, "applied and confirmed") {
		t.Fatalf("the static address was not applied:\n%s", said)
	}
	c := configClient(v)
	ctx := context.Background()
	cur, err := c.Config(ctx)
	if err != nil {
		t.Fatalf("the box does not answer on its static address: %v", err)
	}
	got, err := config.Parse("in force", []byte(cur.Text))
	if err != nil || got.Management.DHCP || got.Management.Address != "10.0.2.15/24" || got.Management.Gateway != "10.0.2.2" {
		t.Errorf("the management setup in force: %+v, %v", got.Management, err)
	}
	if cur.By != "console" || cur.From != "ttyS0" {
		t.Errorf("the version in force was made by %q from %q, want console from ttyS0", cur.By, cur.From)
	}
	t.Logf("the console's change: version %d by %s from %s", cur.Version, cur.By, cur.From)

	con.typeLine("4")
	con.expect("[y/N] ", v.Within(10*time.Second))
	con.typeLine("y")
	said = con.expect("Choice: ", v.Within(time.Minute))
	m := regexp.MustCompile(`shown this once:\s+(\S+)`).FindStringSubmatch(said)
	if m == nil {
		t.Fatalf("no new password printed:\n%s", said)
	}
	con.typeLine("0")
	fresh := &api.Client{URL: v.StatusURL(), Password: m[1], HTTP: v.Client(time.Minute)}
	if _, err := fresh.Config(ctx); err != nil {
		t.Errorf("the new password from the console is refused: %v", err)
	}
	if _, err := c.Config(ctx); err == nil {
		t.Errorf("the password before the reset still works")
	}
	t.Logf("the serial console, as typed and printed:\n%s", con.seen.String())
}
