package bypass

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
)

// silicomProc is Silicom's /proc/net/bypass/bypass_<if>/ driver modelled
// in memory: files take on/off and milliseconds, the bypass watchdog
// (bypass_wd, ms, rounded up to 100ms x 2^n by the driver) falls to bypass
// when not reset, and wd_expire_time reads -1 once it has.
type silicomProc struct {
	files   map[string]string
	log     []string
	leftMS  int
	expired bool
}

func newSilicomProc() *silicomProc {
	return &silicomProc{files: map[string]string{
		"bypass": "off", "disc": "off", "bypass_pwoff": "on", "bypass_pwup": "on",
		"bypass_wd": "0", "reset_bypass_wd": "", "wd_expire_time": "0",
	}}
}

const silicomDir = "/proc/net/bypass/bypass_eth2"

func (p *silicomProc) read(path string) (string, error) {
	dir, name := filepath.Split(path)
	if filepath.Clean(dir) != silicomDir {
		return "", fmt.Errorf("read outside the driver: %s", path)
	}
	if name == "wd_expire_time" {
		if p.expired {
			return "-1", nil
		}
		return fmt.Sprint(p.leftMS), nil
	}
	v, ok := p.files[name]
	if !ok {
		return "", os.ErrNotExist
	}
	return v, nil
}

func (p *silicomProc) write(path, value string) error {
	dir, name := filepath.Split(path)
	if filepath.Clean(dir) != silicomDir {
		return fmt.Errorf("write outside the driver: %s", path)
	}
	if _, ok := p.files[name]; !ok {
		return os.ErrNotExist
	}
	p.log = append(p.log, name+"="+value)
	switch name {
	case "bypass_wd":
		var ms int
		fmt.Sscan(value, &ms)
		if ms > 0 {
			r := 100
			for r < ms {
				r *= 2
			}
			ms = r
		}
		p.files[name], p.leftMS, p.expired = fmt.Sprint(ms), ms, false
	case "reset_bypass_wd":
		var ms int
		fmt.Sscan(p.files["bypass_wd"], &ms)
		p.leftMS = ms
	default:
		p.files[name] = value
	}
	return nil
}

func (p *silicomProc) tick(ms int) {
	if p.leftMS == 0 || p.expired {
		return
	}
	p.leftMS -= ms
	if p.leftMS <= 0 {
		p.leftMS, p.expired = 0, true
		p.files["bypass"] = "on"
	}
}

func (p *silicomProc) take() []string {
	l := p.log
	p.log = nil
	return l
}

// silicomSysfs is the profile section for Silicom's proc interface.
func silicomSysfs() config.Sysfs {
	fw := func(f, v string) []config.FileWrite { return []config.FileWrite{{File: f, Value: v}} }
	return config.Sysfs{
		Dir: "/proc/net/bypass/bypass_{if}",
		State: config.FileStates{
			Normal:     []config.FileWrite{{File: "disc", Value: "off"}, {File: "bypass", Value: "off"}},
			Bypass:     []config.FileWrite{{File: "disc", Value: "off"}, {File: "bypass", Value: "on"}},
			Disconnect: []config.FileWrite{{File: "bypass", Value: "off"}, {File: "disc", Value: "on"}},
		},
		PowerOff: config.FileStates{Bypass: fw("bypass_pwoff", "on"), Disconnect: fw("bypass_pwoff", "off")},
		PowerUp:  config.FileStates{Bypass: fw("bypass_pwup", "on"), Normal: fw("bypass_pwup", "off")},
		Timer: config.FileTimer{File: "bypass_wd", Unit: config.Duration{Duration: time.Millisecond}, Max: 6400,
			Kick: fw("reset_bypass_wd", "1"), Left: "wd_expire_time"},
	}
}

func TestSysfsSilicom(t *testing.T) {
	p := newSilicomProc()
	b, err := newSysfs(p, silicomSysfs(), [2]string{"eth2", "eth3"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		s    bypassapi.State
		want []string
	}{
		{bypassapi.Bypass, []string{"disc=off", "bypass=on"}},
		{bypassapi.Disconnect, []string{"bypass=off", "disc=on"}},
		{bypassapi.Normal, []string{"disc=off", "bypass=off"}},
	} {
		if err := b.Set(tc.s); err != nil {
			t.Fatal(err)
		}
		wantLog(t, "set "+string(tc.s), p.take(), tc.want...)
		if s, err := b.Get(); s != tc.s || err != nil {
			t.Errorf("read back %s, %v; want %s", s, err, tc.s)
		}
	}
	if err := b.SetDefault(bypassapi.PowerOff, bypassapi.Disconnect); err != nil {
		t.Fatal(err)
	}
	if err := b.SetDefault(bypassapi.PowerUp, bypassapi.Normal); err != nil {
		t.Fatal(err)
	}
	wantLog(t, "defaults", p.take(), "bypass_pwoff=off", "bypass_pwup=off")
	if s, _ := b.Default(bypassapi.PowerUp); s != bypassapi.Normal {
		t.Errorf("power_up default reads %s", s)
	}
	// 250ms: the driver rounds to 400ms.
	if _, err := b.Arm(250 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	p.tick(100)
	if left, _ := b.TimeLeft(); left != 300*time.Millisecond {
		t.Errorf("time left %v, want 300ms", left)
	}
	if err := b.Kick(); err != nil {
		t.Fatal(err)
	}
	wantLog(t, "arm and kick", p.take(), "bypass_wd=250", "reset_bypass_wd=1")
	p.tick(500)
	if s, _ := b.Get(); s != bypassapi.Bypass {
		t.Errorf("after the watchdog expired: %s, want bypass", s)
	}
	if err := b.Kick(); !errors.Is(err, errTimerExpired) {
		t.Errorf("kick after expiry: %v", err)
	}
	if err := b.Disarm(); err != nil {
		t.Fatal(err)
	}
	wantLog(t, "disarm", p.take(), "bypass_wd=0")
	if c := b.Caps(); !c.CanDefault(bypassapi.PowerOff, bypassapi.Disconnect) || c.Timer == nil || !c.Timer.TimeLeft {
		t.Errorf("caps %+v", c)
	}
}

// TestSysfsFiles runs the backend against real files (a Chelsio-style
// bypass directory under a temporary /sys/class/net), the way it runs on
// the appliance.
func TestSysfsFiles(t *testing.T) {
	tree := newFileTree(t, map[string]string{"eth4/bypass/state": "normal\n", "eth4/bypass/watchdog": "0\n"})
	cfg := config.Sysfs{
		Dir: filepath.Join(tree.dir, "{if}/bypass"),
		State: config.FileStates{Normal: []config.FileWrite{{File: "state", Value: "normal"}},
			Bypass: []config.FileWrite{{File: "state", Value: "bypass"}}, Disconnect: []config.FileWrite{{File: "state", Value: "drop"}}},
		Timer: config.FileTimer{File: "watchdog", Unit: config.Seconds(1), Max: 60},
	}
	b, err := newSysfs(osFiles{}, cfg, [2]string{"eth4", "eth5"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []bypassapi.State{bypassapi.Bypass, bypassapi.Disconnect, bypassapi.Normal} {
		if err := b.Set(s); err != nil {
			t.Fatal(err)
		}
		want := map[bypassapi.State]string{bypassapi.Normal: "normal", bypassapi.Bypass: "bypass", bypassapi.Disconnect: "drop"}[s]
		if got := tree.read(t, "eth4/bypass/state"); got != want {
			t.Errorf("set %s wrote %q, want %q", s, got, want)
		}
		if got, err := b.Get(); got != s || err != nil {
			t.Errorf("read back %s, %v", got, err)
		}
	}
	if d, err := b.Arm(1500 * time.Millisecond); d != 2*time.Second || err != nil {
		t.Errorf("Arm = %v, %v", d, err)
	}
	if got := tree.read(t, "eth4/bypass/watchdog"); got != "2" {
		t.Errorf("watchdog file %q, want 2", got)
	}
	// A missing driver file is an error, never created.
	os.Remove(filepath.Join(tree.dir, "eth4/bypass/state"))
	if err := b.Set(bypassapi.Bypass); err == nil {
		t.Error("wrote a state file the driver does not have")
	}
	if _, err := os.Stat(filepath.Join(tree.dir, "eth4/bypass/state")); err == nil {
		t.Error("created a driver file")
	}
}

// silicomCard is a Silicom bypass adapter behind /dev/bpctl0, at the ioctl
// level: it checks each request number against _IOWR('J', cmd, struct
// bpctl_cmd) and the controlling port's ifindex, and answers as the driver
// does.
type silicomCard struct {
	t                    *testing.T
	ifindex              int32
	caps, wdCaps         int32
	bypass, disc         int32
	pwoff, pwup, discPwp int32
	wdMS, leftMS         int32
	expired              bool
	log                  []string
}

func (c *silicomCard) ioctl(req uintptr, cmd *bpctlCmd) error {
	n := int(req & 0xff)
	if want := bpctlRequest(n); req != want || req>>30 != 3 || (req>>16)&0x3fff != 100 || (req>>8)&0xff != 'J' {
		c.t.Errorf("ioctl request %#x, want _IOWR('J', %d, 100 bytes) = %#x", req, n, want)
	}
	if cmd.InParam[1] != c.ifindex {
		cmd.Status = -1
		return nil
	}
	v := cmd.InParam[2]
	name := bpctlNames[n]
	if strings.HasPrefix(name, "SET_") || name == "RESET_BYPASS_WD_TIMER" {
		c.log = append(c.log, fmt.Sprintf("%s(%d)", name, v))
	}
	st := int32(0)
	switch n {
	case bpGetBypassCaps:
		st = c.caps
	case bpGetWDSetCaps:
		st = c.wdCaps
	case bpSetBypass:
		c.bypass = v
	case bpGetBypass:
		st = c.bypass
	case bpSetDisc:
		c.disc = v
	case bpGetDisc:
		st = c.disc
	case bpSetBypassPwoff:
		c.pwoff = v
	case bpGetBypassPwoff:
		st = c.pwoff
	case bpSetBypassPwup:
		c.pwup = v
	case bpGetBypassPwup:
		st = c.pwup
	case bpSetDiscPwup:
		c.discPwp = v
	case bpGetDiscPwup:
		st = c.discPwp
	case bpSetBypassWD:
		ms := int32(0)
		if v > 0 {
			for ms = 100; ms < v; ms *= 2 {
			}
		}
		c.wdMS, c.leftMS, c.expired = ms, ms, false
		st = ms
	case bpResetBypassWD:
		if c.wdMS == 0 {
			st = 0
		} else {
			c.leftMS, st = c.wdMS, 1
		}
	case bpGetWDExpireTime:
		cmd.Data[0] = c.leftMS
		if c.expired {
			cmd.Data[0] = -1
		}
	default:
		st = -1
	}
	cmd.Status = st
	return nil
}

func (c *silicomCard) Close() error { return nil }

func (c *silicomCard) tick(ms int32) {
	if c.wdMS == 0 || c.expired {
		return
	}
	if c.leftMS -= ms; c.leftMS <= 0 {
		c.leftMS, c.expired, c.bypass = 0, true, 1
	}
}

func (c *silicomCard) take() []string {
	l := c.log
	c.log = nil
	return l
}

func TestBpctl(t *testing.T) {
	card := &silicomCard{t: t, ifindex: 7,
		caps:   bpCap | bpStatusCap | swCtlCap | bpPwoffCtlCap | bpPwupCtlCap | wdCtlCap | wdTimeoutCap | discCap | discPwupCtlCap,
		wdCaps: 1 | wdtStepTime | 8<<5} // 100ms x 2^n, 8 steps
	if _, err := newBpctl(card, 8); err == nil {
		t.Error("a slave port (wrong ifindex) was accepted as the pair's master")
	}
	b, err := newBpctl(card, 7)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		s    bypassapi.State
		want []string
	}{
		{bypassapi.Bypass, []string{"SET_DISC(0)", "SET_BYPASS(1)"}},
		{bypassapi.Disconnect, []string{"SET_BYPASS(0)", "SET_DISC(1)"}},
		{bypassapi.Normal, []string{"SET_DISC(0)", "SET_BYPASS(0)"}},
	} {
		if err := b.Set(tc.s); err != nil {
			t.Fatal(err)
		}
		wantLog(t, "set "+string(tc.s), card.take(), tc.want...)
		if s, err := b.Get(); s != tc.s || err != nil {
			t.Errorf("read back %s, %v", s, err)
		}
	}
	for _, tc := range []struct {
		e    bypassapi.Event
		s    bypassapi.State
		want []string
	}{
		{bypassapi.PowerOff, bypassapi.Bypass, []string{"SET_BYPASS_PWOFF(1)"}},
		{bypassapi.PowerOff, bypassapi.Disconnect, []string{"SET_BYPASS_PWOFF(0)"}},
		{bypassapi.PowerUp, bypassapi.Bypass, []string{"SET_DISC_PWUP(0)", "SET_BYPASS_PWUP(1)"}},
		{bypassapi.PowerUp, bypassapi.Disconnect, []string{"SET_DISC_PWUP(1)", "SET_BYPASS_PWUP(0)"}},
	} {
		if err := b.SetDefault(tc.e, tc.s); err != nil {
			t.Fatal(err)
		}
		wantLog(t, fmt.Sprintf("%s %s", tc.e, tc.s), card.take(), tc.want...)
		if s, err := b.Default(tc.e); s != tc.s || err != nil {
			t.Errorf("%s default reads %s, %v", tc.e, s, err)
		}
	}
	if err := b.SetDefault(bypassapi.TimerExpiry, bypassapi.Disconnect); !errors.Is(err, errUnsupported) {
		t.Errorf("timer_expiry disconnect: %v", err)
	}
	if s, _ := b.Default(bypassapi.TimerExpiry); s != bypassapi.Bypass {
		t.Errorf("timer_expiry reads %s, want the fixed bypass", s)
	}
	// 1s asked: the driver rounds to 1.6s and says so.
	if d, err := b.Arm(time.Second); d != 1600*time.Millisecond || err != nil {
		t.Errorf("Arm(1s) = %v, %v; want 1.6s", d, err)
	}
	card.tick(1000)
	if left, _ := b.TimeLeft(); left != 600*time.Millisecond {
		t.Errorf("time left %v", left)
	}
	if err := b.Kick(); err != nil {
		t.Fatal(err)
	}
	wantLog(t, "arm and kick", card.take(), "SET_BYPASS_WD(1000)", "RESET_BYPASS_WD_TIMER(0)")
	card.tick(2000)
	if s, _ := b.Get(); s != bypassapi.Bypass {
		t.Errorf("after the watchdog expired: %s", s)
	}
	if err := b.Kick(); !errors.Is(err, errTimerExpired) {
		t.Errorf("kick after expiry: %v", err)
	}
	c := b.Caps()
	if c.Timer == nil || c.Timer.Min != 100*time.Millisecond || c.Timer.Max != 12800*time.Millisecond || !c.Can(bypassapi.Disconnect) {
		t.Errorf("caps %+v timer %+v", c, c.Timer)
	}
}

// vendorTool is a fake vendor command line tool.
type vendorTool struct {
	state string
	calls []string
}

func (v *vendorTool) run(_ context.Context, argv []string) ([]byte, error) {
	v.calls = append(v.calls, strings.Join(argv, " "))
	switch {
	case slices.Equal(argv[1:], []string{"get", "eth2"}):
		return []byte("eth2: bypass mode " + v.state + "\n"), nil
	case len(argv) == 4 && argv[1] == "set":
		v.state = argv[3]
		return nil, nil
	case argv[1] == "wdt":
		return nil, nil
	}
	return []byte("usage"), errors.New("exit status 2")
}

func TestExec(t *testing.T) {
	tool := &vendorTool{state: "off"}
	cfg := config.Exec{
		State: config.ExecStates{Normal: []string{"/opt/vendor/bp", "set", "{if}", "off"},
			Bypass: []string{"/opt/vendor/bp", "set", "{if}", "on"}, Disconnect: []string{"/opt/vendor/bp", "set", "{if}", "disc"}},
		Get:   []string{"/opt/vendor/bp", "get", "{if}"},
		Match: config.ExecMatch{Normal: `mode off`, Bypass: `mode on`, Disconnect: `mode disc`},
		Arm:   []string{"/opt/vendor/bp", "wdt", "{if}", "{s}"}, Kick: []string{"/opt/vendor/bp", "wdt", "{if}", "kick"},
		TimerMax: config.Seconds(255),
	}
	b, err := newExec(tool.run, cfg, "pair1", [2]string{"eth2", "eth3"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []bypassapi.State{bypassapi.Bypass, bypassapi.Disconnect, bypassapi.Normal} {
		tool.calls = nil
		if err := b.Set(s); err != nil {
			t.Fatal(err)
		}
		if got, err := b.Get(); got != s || err != nil {
			t.Errorf("read back %s, %v", got, err)
		}
		arg := map[bypassapi.State]string{bypassapi.Normal: "off", bypassapi.Bypass: "on", bypassapi.Disconnect: "disc"}[s]
		wantLog(t, "set "+string(s), tool.calls, "/opt/vendor/bp set eth2 "+arg, "/opt/vendor/bp get eth2")
	}
	tool.calls = nil
	if d, err := b.Arm(2500 * time.Millisecond); d != 3*time.Second || err != nil {
		t.Errorf("Arm = %v, %v", d, err)
	}
	if err := b.Kick(); err != nil {
		t.Fatal(err)
	}
	wantLog(t, "timer", tool.calls, "/opt/vendor/bp wdt eth2 3", "/opt/vendor/bp wdt eth2 kick")
	tool.state = "confused"
	if s, err := b.Get(); s != bypassapi.Unknown || err == nil {
		t.Errorf("unrecognised output read as %s, %v", s, err)
	}
	if err := b.SetDefault(bypassapi.PowerOff, bypassapi.Bypass); !errors.Is(err, errUnsupported) {
		t.Errorf("power_off without a command: %v", err)
	}
}

// TestExecReal runs a real program (a shell script standing in for the
// vendor's tool) through the os/exec path.
func TestExecReal(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	tool := filepath.Join(dir, "bp")
	script := "#!/bin/sh\ncase \"$1\" in\nset) echo \"$3\" > " + state + ";;\nget) cat " + state + ";;\n*) exit 3;;\nesac\n"
	if err := os.WriteFile(tool, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := config.Exec{
		State: config.ExecStates{Normal: []string{tool, "set", "{if}", "off"}, Bypass: []string{tool, "set", "{if}", "on"}},
		Get:   []string{tool, "get", "{if}"}, Match: config.ExecMatch{Normal: `^off`, Bypass: `^on`},
	}
	b, err := newExec(runCommand, cfg, "p", [2]string{"eth0", "eth1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Set(bypassapi.Bypass); err != nil {
		t.Fatal(err)
	}
	if s, err := b.Get(); s != bypassapi.Bypass || err != nil {
		t.Errorf("read back %s, %v", s, err)
	}
	b.cfg.Get = []string{tool, "bogus"}
	if _, err := b.Get(); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("failing tool: %v", err)
	}
}
