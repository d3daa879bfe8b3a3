package bypass

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
)

// mb7565 is the register map of Lanner's MB-7565 as its public driver
// drives it: W83627 GPIO in LDN 8 (GP24 on CRF1 bit 4 is the LAN1/LAN2
// relay, low = bypass; CRF1 bits 3:2 choose the power-off behaviour), the
// watchdog count in CRF6 (seconds), and GP30 (LDN 9 CRF1 bit 0) choosing
// bypass rather than reset when it expires.
func mb7565() (config.SuperIO, config.RegisterMap) {
	rb := func(reg, mask, value int) config.RegBits { return config.RegBits{Reg: reg, Mask: mask, Value: value} }
	return config.SuperIO{LogicalDevice: 8}, config.RegisterMap{
		Init: []config.RegBits{rb(0x2a, 0x3e, 0x00), rb(0x30, 0x01, 0x01), rb(0xf0, 0x7c, 0x00), rb(0xf2, 0xff, 0x00)},
		State: config.RegStates{
			Normal: []config.RegBits{rb(0xf1, 0x10, 0x10)},
			Bypass: []config.RegBits{rb(0xf1, 0x10, 0x00)},
		},
		PowerOff: config.RegStates{
			Bypass: []config.RegBits{rb(0xf1, 0x0c, 0x04)},
			Normal: []config.RegBits{rb(0xf1, 0x0c, 0x08)},
		},
		TimerExpiry: config.RegStates{
			Bypass: []config.RegBits{{Reg: 0xf1, Mask: 0x01, Value: 0x00, LDN: 9}},
		},
		Timer: config.RegTimer{Reg: 0xf6, Unit: config.Seconds(1), Max: 255, CountsDown: true},
	}
}

func TestSuperIO(t *testing.T) {
	w := newW83627()
	w.global[0x2a] = 0xff
	*w.reg(8, 0xf0) = 0xff
	*w.reg(8, 0xf1) = 0x10 // normal
	cfg, m := mb7565()
	b, err := newSuperIO(w, cfg, m)
	if err != nil {
		t.Fatal(err)
	}
	enter := []string{"out 0x2e 0x87", "out 0x2e 0x87", "out 0x2e 0x07", "out 0x2f 0x08"}
	leave := "out 0x2e 0xaa"
	seq := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	wantLog(t, "init", w.take(), seq(enter, []string{
		"out 0x2e 0x2a", "in 0x2f = 0xff", "out 0x2e 0x2a", "out 0x2f 0xc1",
		"out 0x2e 0x30", "in 0x2f = 0x00", "out 0x2e 0x30", "out 0x2f 0x01",
		"out 0x2e 0xf0", "in 0x2f = 0xff", "out 0x2e 0xf0", "out 0x2f 0x83",
		"out 0x2e 0xf2", "in 0x2f = 0x00", "out 0x2e 0xf2", "out 0x2f 0x00",
		leave})...)

	// Every state: the exact accesses, the register afterwards, and the
	// state read back.
	for _, tc := range []struct {
		s    bypassapi.State
		old  byte
		f1   byte
		want []string
	}{
		{bypassapi.Bypass, 0x10, 0x00, []string{"out 0x2e 0xf1", "in 0x2f = 0x10", "out 0x2e 0xf1", "out 0x2f 0x00"}},
		{bypassapi.Normal, 0x00, 0x10, []string{"out 0x2e 0xf1", "in 0x2f = 0x00", "out 0x2e 0xf1", "out 0x2f 0x10"}},
	} {
		*w.reg(8, 0xf1) = tc.old
		if err := b.Set(tc.s); err != nil {
			t.Fatal(err)
		}
		wantLog(t, "set "+string(tc.s), w.take(), seq(enter, tc.want, []string{leave})...)
		if got := *w.reg(8, 0xf1); got != tc.f1 {
			t.Errorf("set %s: CRF1 = %#02x, want %#02x", tc.s, got, tc.f1)
		}
		if s, err := b.Get(); s != tc.s || err != nil {
			t.Errorf("read back %s, %v; want %s", s, err, tc.s)
		}
		wantLog(t, "get "+string(tc.s), w.take(), seq(enter, []string{"out 0x2e 0xf1", "in 0x2f = " + hex(tc.f1)}, []string{leave})...)
	}
	if err := b.Set(bypassapi.Disconnect); !errors.Is(err, errUnsupported) {
		t.Errorf("set disconnect: %v, want ErrUnsupported", err)
	}
	if len(w.take()) != 0 {
		t.Error("an unsupported state touched the hardware")
	}

	// Event defaults, including a write to another logical device.
	*w.reg(8, 0xf1) = 0x10
	if err := b.SetDefault(bypassapi.PowerOff, bypassapi.Bypass); err != nil {
		t.Fatal(err)
	}
	wantLog(t, "power_off bypass", w.take(), seq(enter, []string{"out 0x2e 0xf1", "in 0x2f = 0x10", "out 0x2e 0xf1", "out 0x2f 0x14"}, []string{leave})...)
	if s, err := b.Default(bypassapi.PowerOff); s != bypassapi.Bypass || err != nil {
		t.Errorf("power_off default reads %s, %v", s, err)
	}
	w.take()
	*w.reg(9, 0xf1) = 0x01
	if err := b.SetDefault(bypassapi.TimerExpiry, bypassapi.Bypass); err != nil {
		t.Fatal(err)
	}
	wantLog(t, "timer_expiry bypass", w.take(), seq(enter, []string{
		"out 0x2e 0x07", "out 0x2f 0x09", "out 0x2e 0xf1", "in 0x2f = 0x01", "out 0x2e 0xf1", "out 0x2f 0x00"}, []string{leave})...)
	if err := b.SetDefault(bypassapi.PowerUp, bypassapi.Bypass); !errors.Is(err, errUnsupported) {
		t.Errorf("power_up default: %v, want ErrUnsupported", err)
	}

	// The watchdog: 2.5s rounds up to 3 counts of 1s.
	got, err := b.Arm(2500 * time.Millisecond)
	if err != nil || got != 3*time.Second {
		t.Fatalf("Arm(2.5s) = %v, %v; want 3s", got, err)
	}
	wantLog(t, "arm", w.take(), seq(enter, []string{"out 0x2e 0xf6", "in 0x2f = 0x00", "out 0x2e 0xf6", "out 0x2f 0x03"}, []string{leave})...)
	w.tick(2)
	if left, err := b.TimeLeft(); left != time.Second || err != nil {
		t.Errorf("TimeLeft = %v, %v; want 1s", left, err)
	}
	w.take()
	if err := b.Kick(); err != nil {
		t.Fatal(err)
	}
	wantLog(t, "kick", w.take(), seq(enter, []string{"out 0x2e 0xf6", "in 0x2f = 0x01"}, []string{leave},
		enter, []string{"out 0x2e 0xf6", "in 0x2f = 0x01", "out 0x2e 0xf6", "out 0x2f 0x03"}, []string{leave})...)
	// Not kicked: the relay falls to bypass by itself.
	if s, _ := b.Get(); s != bypassapi.Normal {
		t.Fatalf("before expiry: %s", s)
	}
	w.tick(3)
	if s, _ := b.Get(); s != bypassapi.Bypass {
		t.Errorf("after the watchdog expired the relay reads %s, want bypass", s)
	}
	if err := b.Kick(); !errors.Is(err, errTimerExpired) {
		t.Errorf("kick after expiry: %v, want ErrTimerExpired", err)
	}
	w.take()
	if err := b.Disarm(); err != nil {
		t.Fatal(err)
	}
	wantLog(t, "disarm", w.take(), seq(enter, []string{"out 0x2e 0xf6", "in 0x2f = 0x00", "out 0x2e 0xf6", "out 0x2f 0x00"}, []string{leave})...)

	if len(w.violations) > 0 || w.unlocked {
		t.Errorf("protocol violations %v, left unlocked %v", w.violations, w.unlocked)
	}
	c := b.Caps()
	if !c.Can(bypassapi.Normal) || !c.Can(bypassapi.Bypass) || c.Can(bypassapi.Disconnect) || !c.CanDefault(bypassapi.PowerOff, bypassapi.Normal) || c.Events[bypassapi.PowerUp] != nil ||
		c.Timer == nil || c.Timer.Max != 255*time.Second || !c.Timer.TimeLeft || !c.LinkDownInBypass || c.ReadBackOf != bypassapi.ReadsLatch {
		t.Errorf("caps = %+v", c)
	}
	if !strings.Contains(strings.Join(c.Notes, "; "), "cannot fail open without power") {
		t.Errorf("caps notes %v do not say the relay cannot fail open without power", c.Notes)
	}
}

func hex(b byte) string {
	return "0x" + string("0123456789abcdef"[b>>4]) + string("0123456789abcdef"[b&15])
}

func TestIOPort(t *testing.T) {
	ps := &portSpace{ports: map[int64]byte{0x8e3: 0xa1, 0x8e7: 0x00}}
	m := config.RegisterMap{
		State: config.RegStates{
			Normal:     []config.RegBits{{Reg: 0x8e3, Mask: 0x03, Value: 0x01}},
			Bypass:     []config.RegBits{{Reg: 0x8e3, Mask: 0x03, Value: 0x00}},
			Disconnect: []config.RegBits{{Reg: 0x8e3, Mask: 0x03, Value: 0x02}},
		},
		Timer: config.RegTimer{Reg: 0x8e7, Unit: config.Duration{Duration: 500 * time.Millisecond}, Max: 30,
			Arm:    []config.RegBits{{Reg: 0x8e3, Mask: 0x80, Value: 0x80}},
			Disarm: []config.RegBits{{Reg: 0x8e3, Mask: 0x80, Value: 0x00}}},
	}
	b, err := newIOPort(ps, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		s    bypassapi.State
		want []string
		reg  byte
	}{
		{bypassapi.Bypass, []string{"in 0x8e3 = 0xa1", "out 0x8e3 0xa0"}, 0xa0},
		{bypassapi.Disconnect, []string{"in 0x8e3 = 0xa0", "out 0x8e3 0xa2"}, 0xa2},
		{bypassapi.Normal, []string{"in 0x8e3 = 0xa2", "out 0x8e3 0xa1"}, 0xa1},
	} {
		if err := b.Set(tc.s); err != nil {
			t.Fatal(err)
		}
		wantLog(t, "set "+string(tc.s), ps.take(), tc.want...)
		if ps.ports[0x8e3] != tc.reg {
			t.Errorf("set %s: 0x8e3 = %#02x, want %#02x", tc.s, ps.ports[0x8e3], tc.reg)
		}
		if s, err := b.Get(); s != tc.s || err != nil {
			t.Errorf("read back %s, %v; want %s", s, err, tc.s)
		}
		ps.take()
	}
	// 20s is beyond 30 counts of 500ms: clamped to the hardware's 15s.
	if got, err := b.Arm(20 * time.Second); got != 15*time.Second || err != nil {
		t.Errorf("Arm(20s) = %v, %v; want 15s", got, err)
	}
	wantLog(t, "arm", ps.take(), "in 0x8e7 = 0x00", "out 0x8e7 0x1e", "in 0x8e3 = 0xa1", "out 0x8e3 0xa1")
	if err := b.Kick(); err != nil {
		t.Fatal(err)
	}
	wantLog(t, "kick", ps.take(), "in 0x8e7 = 0x1e", "out 0x8e7 0x1e")
	if _, err := b.TimeLeft(); !errors.Is(err, errUnsupported) {
		t.Errorf("TimeLeft on a timer that does not count down: %v", err)
	}
	if err := b.Disarm(); err != nil {
		t.Fatal(err)
	}
	wantLog(t, "disarm", ps.take(), "in 0x8e3 = 0xa1", "out 0x8e3 0x21")
	// Bits that match no state are an error, not a guess.
	ps.ports[0x8e3] = 0x03
	if s, err := b.Get(); s != bypassapi.Unknown || err == nil || !strings.Contains(err.Error(), "matches no state") {
		t.Errorf("Get on 0x03 = %s, %v", s, err)
	}
}

func gen3Map() config.RegisterMap {
	rb := func(reg, mask, value int) []config.RegBits {
		return []config.RegBits{{Reg: reg, Mask: mask, Value: value}}
	}
	return config.RegisterMap{
		State:       config.RegStates{Normal: rb(0x10, 0x03, 0x00), Bypass: rb(0x10, 0x03, 0x01), Disconnect: rb(0x10, 0x03, 0x02)},
		PowerUp:     config.RegStates{Normal: rb(0x11, 0x01, 0x00), Bypass: rb(0x11, 0x01, 0x01)},
		PowerOff:    config.RegStates{Normal: rb(0x12, 0x01, 0x00), Bypass: rb(0x12, 0x01, 0x01)},
		TimerExpiry: config.RegStates{Bypass: rb(0x14, 0x04, 0x00)},
		Timer: config.RegTimer{Reg: 0x13, Unit: config.Seconds(1), Max: 255, CountsDown: true,
			Arm: rb(0x14, 0x03, 0x01), Disarm: rb(0x14, 0x03, 0x00)},
	}
}

func TestSMBus(t *testing.T) {
	g := &gen3{}
	b, err := newSMBus(g, config.SMBus{Bus: 0, Address: 0x55}, gen3Map())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		s    bypassapi.State
		want []string
	}{
		{bypassapi.Bypass, []string{"r 0x10 = 0x00", "w 0x10 0x01"}},
		{bypassapi.Disconnect, []string{"r 0x10 = 0x01", "w 0x10 0x02"}},
		{bypassapi.Normal, []string{"r 0x10 = 0x02", "w 0x10 0x00"}},
	} {
		if err := b.Set(tc.s); err != nil {
			t.Fatal(err)
		}
		wantLog(t, "set "+string(tc.s), g.take(), tc.want...)
		if s, err := b.Get(); s != tc.s || err != nil {
			t.Errorf("read back %s, %v", s, err)
		}
		g.take()
	}
	for _, e := range []bypassapi.Event{bypassapi.PowerUp, bypassapi.PowerOff} {
		if err := b.SetDefault(e, bypassapi.Bypass); err != nil {
			t.Fatal(err)
		}
		if s, err := b.Default(e); s != bypassapi.Bypass || err != nil {
			t.Errorf("%s default reads %s, %v", e, s, err)
		}
	}
	wantLog(t, "just-on and system-off bypass", g.take(), "r 0x11 = 0x00", "w 0x11 0x01", "r 0x11 = 0x01", "r 0x12 = 0x00", "w 0x12 0x01", "r 0x12 = 0x01")

	if got, err := b.Arm(2 * time.Second); got != 2*time.Second || err != nil {
		t.Fatalf("Arm = %v, %v", got, err)
	}
	wantLog(t, "arm", g.take(), "r 0x13 = 0x00", "w 0x13 0x02", "r 0x14 = 0x00", "w 0x14 0x01")
	g.tick(1)
	if err := b.Kick(); err != nil {
		t.Fatal(err)
	}
	wantLog(t, "kick", g.take(), "r 0x13 = 0x01", "r 0x13 = 0x01", "w 0x13 0x02")
	g.tick(2)
	if s, _ := b.Get(); s != bypassapi.Bypass {
		t.Errorf("controller timer expired: relay reads %s, want bypass", s)
	}
	if err := b.Kick(); !errors.Is(err, errTimerExpired) {
		t.Errorf("kick after expiry: %v", err)
	}
	if err := b.Close(); err != nil || !g.closed {
		t.Error("Close did not close the device")
	}
	c := b.Caps()
	if !c.Can(bypassapi.Disconnect) || !c.CanDefault(bypassapi.PowerUp, bypassapi.Bypass) || !c.CanDefault(bypassapi.PowerOff, bypassapi.Normal) || c.Timer == nil {
		t.Errorf("caps = %+v", c)
	}
}

// TestProfilesDocExample parses the worked example of PROFILES.md in a
// profile and wants exactly the map the emulated W83627 test uses.
func TestProfilesDocExample(t *testing.T) {
	doc, err := os.ReadFile("PROFILES.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i := strings.Index(s, "### Worked example")
	j := strings.Index(s[i:], "```toml\n")
	k := strings.Index(s[i+j+8:], "```")
	block := s[i+j+8 : i+j+8+k]
	text := "name = \"box\"\ndescription = \"d\"\n[[port]]\nname = \"MGMT\"\nifname = \"e0\"\nmanagement = true\n" +
		"[[port]]\nname = \"LAN1\"\nifname = \"e1\"\n[[port]]\nname = \"LAN2\"\nifname = \"e2\"\n" +
		"[[bypass_pair]]\nname = \"pair1\"\nports = [\"LAN1\", \"LAN2\"]\nbackend = \"superio\"\nregister_map = \"vendor\"\n" + block
	p, err := config.ParseProfile("PROFILES.md", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	cfg, m := mb7565()
	if got := p.BypassPairs[0]; !reflect.DeepEqual(got.Registers, m) || got.SuperIO.LogicalDevice != cfg.LogicalDevice {
		t.Errorf("the documented example parses to\n%+v\nwant\n%+v", got.Registers, m)
	}
}

// TestFW7565ThroughBypassd runs bypassd's supervisor on the compiled-in
// FW-7565 profile against the emulated W83627: boot in bypass, normal
// once the forwarder is live, bypass when forwarderd is killed, bypass by
// the Super I/O's watchdog when bypassd is killed, and the power-off
// default written.
func TestFW7565ThroughBypassd(t *testing.T) {
	w := newW83627()
	w.global[0x2a] = 0xff
	*w.reg(8, 0xf0) = 0xff
	*w.reg(9, 0xf1) = 0x01 // GP30 high: the watchdog resets rather than bypasses until set
	var frac time.Duration
	l := &boxLife{t: t, c: newClock(), cfg: twoSegments(t, "fw-7565"), pairs: 2,
		open: func(bp config.BypassPair, _ [2]string) (Backend, error) {
			return newSuperIO(w, bp.SuperIO, bp.Registers)
		},
		tick: func(d time.Duration) {
			if frac += d; frac >= time.Second {
				frac -= time.Second
				w.tick(1)
			}
		}}
	relays := func(want string, what string) {
		t.Helper()
		got := map[byte]string{0x00: "bypass", 0x30: "normal"}[*w.reg(8, 0xf1)&0x30]
		if got != want {
			t.Fatalf("%s: CRF1 %#02x, want both pairs %s", what, *w.reg(8, 0xf1), want)
		}
	}
	relays("bypass", "powered on")
	l.start()
	l.run(10*time.Second, true)
	relays("bypass", "booted, forwarder not live")
	if *w.reg(8, 0xf1)&0x0c != 0x04 || *w.reg(9, 0xf1)&1 != 0 || *w.reg(8, 0xf6) == 0 {
		t.Errorf("power-off bits %#02x, GP30 %d, watchdog count %d", *w.reg(8, 0xf1)&0x0c, *w.reg(9, 0xf1)&1, *w.reg(8, 0xf6))
	}
	l.forwarder(true)
	l.run(6*time.Second, true)
	relays("normal", "forwarder live")
	l.forwarder(false)
	l.run(400*time.Millisecond, true)
	relays("bypass", "forwarderd killed")
	l.forwarder(true)
	l.run(15*time.Second, true)
	relays("normal", "forwarderd back")
	l.run(3*time.Second, false)
	relays("normal", "bypassd dead for 3s of a 5s watchdog")
	l.run(4*time.Second, false)
	relays("bypass", "bypassd dead past the Super I/O's watchdog")
	l.start()
	l.run(15*time.Second, true)
	relays("normal", "bypassd restarted")
	if len(w.violations) > 0 {
		t.Errorf("violations %q", w.violations)
	}
}
