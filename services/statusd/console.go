package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/appliance"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/console"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/internal/durable"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/passwd"
	"github.com/ncpos/ncpos/sysinfo"
	"github.com/ncpos/ncpos/web"
	"github.com/ncpos/ncpos/web/change"
)

// consoleDevices are the box's physical consoles: its serial port and
// its VGA console.
var consoleDevices = []string{"/dev/ttyS0", "/dev/tty1"}

// consoleBox is what the console menu does on this box.
type consoleBox struct {
	ifname, port, tlsDir string
	fingerprint          string
	srv                  *web.Server
	evlog                *events.Log
}

func (b *consoleBox) About() console.About {
	a := console.About{Build: "dev", Fingerprint: b.fingerprint, Port: b.port, Interface: b.ifname}
	a.Hostname, _ = os.Hostname()
	if rec, err := sysinfo.ReadInitRecord(ipc.Dir()); err == nil {
		a.Build = rec.BuildID
	}
	if ifi, err := net.InterfaceByName(b.ifname); err == nil {
		addrs, _ := ifi.Addrs()
		for _, ad := range addrs {
			a.Addresses = append(a.Addresses, ad.String())
		}
	}
	return a
}

// changes is the box's configuration path, when it has one.
func (b *consoleBox) changes() (*change.Manager, error) {
	if b.srv.Configs == nil || b.srv.Configs.Changes == nil {
		return nil, errors.New("this box keeps no configuration history: its configuration cannot change in place")
	}
	return b.srv.Configs.Changes, nil
}

func (b *consoleBox) Management() (config.Management, error) {
	m, err := b.changes()
	if err != nil {
		return config.Management{}, err
	}
	text, _, err := m.InForce()
	if err != nil {
		return config.Management{}, err
	}
	c, err := config.Parse(appliance.BootConfig, text)
	if err != nil {
		return config.Management{}, err
	}
	return c.Management, nil
}

// SetManagement applies the new management setup, confirmed at once:
// the technician at the console is not cut off by it.
func (b *consoleBox) SetManagement(ctx context.Context, mg config.Management, device string) (string, error) {
	m, err := b.changes()
	if err != nil {
		return "", err
	}
	text, version, err := m.InForce()
	if err != nil {
		return "", err
	}
	next, err := config.SetManagementAddress(appliance.BootConfig, text, mg)
	if err != nil {
		return "", err
	}
	cfg, err := config.Parse(appliance.BootConfig, next)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	// Right after boot the monitor may not have sampled the segments
	// yet: the change is held to them, so it waits for the first sample.
	for b.srv.Monitor.Published() == nil {
		select {
		case <-ctx.Done():
			return "", errors.New("the box has not sampled its segments yet: try again")
		case <-time.After(200 * time.Millisecond):
		}
	}
	res, err := m.Apply(ctx, change.Request{Text: next, Next: cfg, Replaces: version, By: "console", From: device,
		Comment: "management address set at the console"})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Version %d applied and confirmed: the management port is set.", res.Version.Number), nil
}

func (b *consoleBox) ResetPassword(device string) (string, error) {
	pw, err := passwd.Random()
	if err != nil {
		return "", err
	}
	if b.srv.Auth.Password == nil {
		return "", errors.New("this box has no control password to reset")
	}
	if err := b.srv.Auth.Password.Change(pw); err != nil {
		return "", err
	}
	b.evlog.Note(events.Notice, events.KindAudit, []string{"by", "console@" + device, "action", "password"},
		"the password of "+web.User+" was reset at the console "+device)
	return pw, nil
}

// FactoryReset forgets what the box was told since it was installed:
// the configuration, its versions and the last good one, and the
// accounts; the control password stays, so that the technician who
// knows it (or resets it here) signs in again. Then the box reboots on
// its image's configuration.
func (b *consoleBox) FactoryReset(device string, newKey bool) error {
	gone := []string{appliance.PermConfig, appliance.LastGoodConfig, appliance.TrialConfig, appliance.ConfigVersions, web.AccountsFile}
	if newKey {
		gone = append(gone, b.tlsDir)
	}
	var errs []error
	for _, p := range gone {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
		}
	}
	if err := durable.SyncDir(filepath.Dir(appliance.PermConfig)); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	b.evlog.Note(events.Warning, events.KindAudit, []string{"by", "console@" + device, "action", "factory-reset"},
		fmt.Sprintf("factory defaults restored at the console %s (new TLS key: %v); rebooting", device, newKey))
	return b.Reboot(device)
}

func (b *consoleBox) Reboot(device string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return b.srv.Rebooter.Reboot(ctx, "reboot asked at the console "+device)
}

// serveConsoles runs the menu on each console device there is.
func serveConsoles(ctx context.Context, box console.Box) {
	for _, dev := range consoleDevices {
		go func() {
			for ctx.Err() == nil {
				f, err := os.OpenFile(dev, os.O_RDWR|syscall.O_NOCTTY, 0)
				if err != nil {
					log.Printf("console menu: %v", err)
					return
				}
				cmdline, _ := sysinfo.Cmdline("/")
				if err := prepareTTY(f, dev, cmdline); err != nil {
					log.Printf("console menu: %v", err)
				}
				m := &console.Menu{Box: box, Device: filepath.Base(dev)}
				err = m.Serve(ctx, f)
				f.Close()
				if err != nil && ctx.Err() == nil {
					log.Printf("console menu on %s: %v", dev, err)
				}
				time.Sleep(time.Second)
			}
		}()
	}
}

// consoleSpeeds are the serial speeds a console= option may name.
var consoleSpeeds = map[string]uint32{"9600": unix.B9600, "19200": unix.B19200, "38400": unix.B38400,
	"57600": unix.B57600, "115200": unix.B115200}

// prepareTTY keeps the serial console at the speed the kernel's console
// runs at (console=ttyS0,115200 on the command line), so that the menu
// never garbles the kernel's own lines, and reads lines as typed: echo,
// Enter ends a line.
func prepareTTY(f *os.File, dev, cmdline string) error {
	t, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		return fmt.Errorf("%s: %w", dev, err)
	}
	consoleTermios(t, dev, cmdline)
	if err := unix.IoctlSetTermios(int(f.Fd()), unix.TCSETS, t); err != nil {
		return fmt.Errorf("%s: %w", dev, err)
	}
	return nil
}

// consoleTermios sets t as prepareTTY wants it for dev.
func consoleTermios(t *unix.Termios, dev, cmdline string) {
	for _, arg := range strings.Fields(cmdline) {
		v, ok := strings.CutPrefix(arg, "console="+filepath.Base(dev)+",")
		if !ok {
			continue
		}
		digits := v // the speed leads: 115200n8
		if i := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
			digits = v[:i]
		}
		if speed, ok := consoleSpeeds[digits]; ok {
			t.Cflag = t.Cflag&^unix.CBAUD | speed
		}
	}
	t.Lflag |= unix.ICANON | unix.ECHO | unix.ECHOE
	t.Iflag |= unix.ICRNL
	t.Oflag |= unix.OPOST | unix.ONLCR
}
