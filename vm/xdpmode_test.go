package vm

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/internal/frames"
	"github.com/ncpos/ncpos/web/api"
)

// TestXDPModeSwitch boots the default image with its data ports on 82574L
// ports (QEMU's e1000e) and, while a paced stream of numbered frames
// crosses seg1, switches its programs from native to generic and back
// with forwarder.xdp_mode: the e1000e driver of ncpos's kernel moves its
// receive ring from pages to socket buffers and back while frames arrive.
// Frames are lost only while a switch is under way (from the apply to two
// seconds after forwarderd answered it), seg1 is native again after them, and the guest's
// kernel warns of nothing. The guest's CPU time per forwarded frame is
// printed for both modes, from the same paced stream. Then seg1's MTU
// goes to 2026, the most the driver takes natively: seg1 runs native and
// carries the longest frame that MTU allows under two VLAN tags, and a
// frame longer than the MTU allows still reaches the program, which the
// kernel's refusal of its redirect shows. Last, seg1's MTU goes to 3000,
// past what the driver takes natively: seg1 runs generic, says why, and
// carries a 3014-byte frame.
func TestXDPModeSwitch(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	img := testImage(t, "default", config.DefaultTOML())
	cables, wires := newCables(t, 4)
	v, serial := boot(t, img, false, func(o *Options) {
		o.DataModels = []string{"e1000e", "e1000e", "e1000e", "e1000e"}
		o.Wires = wires
	})
	waitForwardingNormally(t, v, 5*time.Minute, "seg1")
	wantAttach(t, v, "seg1", "native")
	perFrame := map[string]cpuCost{"native": cpuPerFrame(t, v, cables[0], cables[1])}

	c := configClient(v)
	ctx := context.Background()
	st := startStream(t, cables[0], cables[1], 2*time.Millisecond)
	time.Sleep(2 * time.Second)
	var windows [][2]time.Time
	replaces := 0
	switchTo := func(mode, want string) {
		t.Helper()
		start := time.Now()
		within := 600
		res, err := c.ApplyConfig(ctx, api.ConfigApply{Text: withXDPMode(mode), Replaces: replaces, ConfirmWithin: &within, Comment: "xdp_mode " + mode})
		if err != nil {
			t.Fatalf("xdp_mode %s: %v", mode, err)
		}
		applied := time.Since(start)
		// The ports were taken down and up by the answer; their links
		// come back within the margin.
		windows = append(windows, [2]time.Time{start, time.Now().Add(v.Within(2 * time.Second))})
		waitForwardingNormally(t, v, time.Minute, "seg1")
		if _, err := c.ConfirmConfig(ctx, res.Version.Number); err != nil {
			t.Fatal(err)
		}
		replaces = res.Version.Number
		t.Logf("xdp_mode %s: applied in %v (taken by %v ms), seg1 forwarding normally %v after the apply",
			mode, applied.Round(time.Millisecond), res.TookMS, time.Since(start).Round(100*time.Millisecond))
		wantAttach(t, v, "seg1", want)
		time.Sleep(2 * time.Second)
	}
	switchTo("generic", "generic")
	switchTo("auto", "native")
	sent, got := st.end(v.Within(2 * time.Second))
	t.Logf("seg1: %d of %d frames of the stream (one every 2 ms) arrived across the two switches", got, sent)
	type loss struct {
		n           int
		first, last time.Duration
	}
	losses := make([]loss, len(windows))
	for _, at := range st.lost() {
		in := false
		for i, w := range windows {
			if at.Before(w[0]) || at.After(w[1]) {
				continue
			}
			in = true
			l, d := &losses[i], at.Sub(w[0])
			if l.n == 0 || d < l.first {
				l.first = d
			}
			l.last = max(l.last, d)
			l.n++
		}
		if !in {
			t.Errorf("a frame sent at %v, outside both switches, was lost", at.Format("15:04:05.000"))
		}
	}
	for i, l := range losses {
		if l.n > 0 {
			t.Logf("switch %d: %d frames lost, sent from %v to %v after the apply", i+1, l.n, l.first.Round(time.Millisecond), l.last.Round(time.Millisecond))
		} else {
			t.Logf("switch %d: no frame lost", i+1)
		}
	}

	// The same burst through generic, for the cost per frame.
	res, err := c.ApplyConfig(ctx, api.ConfigApply{Text: withXDPMode("generic"), Replaces: replaces, Comment: "xdp_mode generic"})
	if err != nil {
		t.Fatal(err)
	}
	waitForwardingNormally(t, v, time.Minute, "seg1")
	wantAttach(t, v, "seg1", "generic")
	perFrame["generic"] = cpuPerFrame(t, v, cables[0], cables[1])
	t.Logf("guest CPU per forwarded 64-byte frame: native %v, generic %v (version %d)", perFrame["native"], perFrame["generic"], res.Version.Number)

	// MTU 2026 is the most the driver takes natively: a 2048-byte
	// receive buffer holds a frame of that MTU with one VLAN tag and
	// its FCS. A segment's MTU counts one tag (its longest frame is
	// MTU + 18 bytes), so under two (QinQ) the longest is 2044 bytes,
	// a 2022-byte packet. A 2026-byte packet under two tags, 2048
	// bytes, is more than the MTU allows; it still fits one buffer,
	// as the NIC strips the FCS, so the program sees it and the
	// kernel refuses its redirect (redirect_too_big), as in generic
	// mode, rather than the driver dropping it (rx_xdp_too_long).
	if _, err := c.ConfirmConfig(ctx, res.Version.Number); err != nil {
		t.Fatal(err)
	}
	res, err = c.ApplyConfig(ctx, api.ConfigApply{Text: withSeg1MTU(2026), Replaces: res.Version.Number, Comment: "seg1 mtu 2026"})
	if err != nil {
		t.Fatal(err)
	}
	waitForwardingNormally(t, v, time.Minute, "seg1")
	wantAttach(t, v, "seg1", "native")
	qinq := frames.QinQ(frames.UDPFrame(2026+14-4, 5000, 5001), 100, 200)
	if took, ok := crossesWithin(cables[0], cables[1], qinq, v.Within(5*time.Second)); !ok {
		t.Errorf("seg1 at MTU 2026: a %d-byte QinQ frame did not cross", len(qinq))
	} else {
		t.Logf("seg1 at MTU 2026, native: a %d-byte QinQ frame crossed in %v", len(qinq), took.Round(time.Millisecond))
	}
	tooBig := segmentDrops(t, v, "seg1", "redirect_too_big")
	over := frames.QinQ(frames.UDPFrame(2026+14, 5000, 5001), 100, 200)
	if _, ok := crossesWithin(cables[0], cables[1], over, v.Within(2*time.Second)); ok {
		t.Errorf("seg1 at MTU 2026: a %d-byte QinQ frame crossed, more than the MTU allows", len(over))
	}
	for deadline := time.Now().Add(v.Within(10 * time.Second)); ; time.Sleep(500 * time.Millisecond) {
		if n := segmentDrops(t, v, "seg1", "redirect_too_big"); n > tooBig {
			t.Logf("seg1 at MTU 2026, native: %d-byte QinQ frames reached the program, their redirects refused (redirect_too_big %d -> %d)", len(over), tooBig, n)
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("seg1 at MTU 2026: no redirect_too_big for %d-byte QinQ frames: the driver did not hand them to the program", len(over))
			break
		}
	}

	// Above MTU 2026 the driver refuses a native program: in auto
	// mode seg1 runs generic, says why, and carries a frame longer
	// than a page's buffer.
	if _, err := c.ConfirmConfig(ctx, res.Version.Number); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ApplyConfig(ctx, api.ConfigApply{Text: withSeg1MTU(3000), Replaces: res.Version.Number, Comment: "seg1 mtu 3000"}); err != nil {
		t.Fatal(err)
	}
	waitForwardingNormally(t, v, time.Minute, "seg1")
	for _, why := range wantAttach(t, v, "seg1", "generic") {
		if !strings.Contains(why, "refused the native attach at MTU 3000") {
			t.Errorf("seg1 at MTU 3000: attach_why %q, want the driver's refusal at MTU 3000", why)
		}
	}
	long := frames.UDPFrame(3000+14, 5000, 5001)
	if took, ok := crossesWithin(cables[0], cables[1], long, v.Within(5*time.Second)); !ok {
		t.Errorf("seg1 at MTU 3000: a %d-byte frame did not cross", len(long))
	} else {
		t.Logf("seg1 at MTU 3000: a %d-byte frame crossed in %v", len(long), took.Round(time.Millisecond))
	}
	noKernelTrouble(t, serial)
}

// segmentDrops sums, over seg's ports, the frames forwarderd counts as
// dropped for reason, as /api/v1/ports says.
func segmentDrops(t *testing.T, v *VM, seg, reason string) uint64 {
	t.Helper()
	var ports struct{ Ports []api.Port }
	getAPI(t, v, "api/v1/ports", &ports)
	var n uint64
	for _, p := range ports.Ports {
		if p.Segment == seg && p.Datapath != nil {
			n += p.Datapath.Drops[reason]
		}
	}
	return n
}

// withSeg1MTU is the default configuration with seg1's MTU set.
func withSeg1MTU(mtu int) string {
	return strings.Replace(string(config.DefaultTOML()), "mtu = 1522", "mtu = "+strconv.Itoa(mtu), 1)
}

// withXDPMode is the default configuration with forwarder.xdp_mode set.
func withXDPMode(mode string) string {
	return strings.Replace(string(config.DefaultTOML()), `xdp_mode = "auto"`, `xdp_mode = "`+mode+`"`, 1)
}

// wantAttach waits up to ten seconds for seg's ports to be attached in
// mode, as /api/v1/ports says (statusd reads forwarderd's status once a
// second), fails t with what they are if they are not, and returns the
// ports' reasons for their mode.
func wantAttach(t *testing.T, v *VM, seg, mode string) (why []string) {
	t.Helper()
	var wrong []string
	for deadline := time.Now().Add(v.Within(10 * time.Second)); ; time.Sleep(500 * time.Millisecond) {
		var ports struct{ Ports []api.Port }
		getAPI(t, v, "api/v1/ports", &ports)
		wrong, why = nil, nil
		for _, p := range ports.Ports {
			if p.Segment != seg || p.Datapath == nil {
				continue
			}
			why = append(why, p.Datapath.AttachWhy)
			if p.Datapath.Attach != mode {
				wrong = append(wrong, fmt.Sprintf("%s %s: attached %s (%s)", seg, p.Name, p.Datapath.Attach, p.Datapath.AttachWhy))
			}
		}
		if len(why) != 2 {
			wrong = append(wrong, fmt.Sprintf("%s: %d ports with datapath information, want 2", seg, len(why)))
		}
		if len(wrong) == 0 {
			return why
		}
		if time.Now().After(deadline) {
			break
		}
	}
	for _, w := range wrong {
		t.Errorf("%s, want %s", w, mode)
	}
	return why
}

// cpuCost is the guest's CPU time in softirq, where XDP runs, beyond its
// idle time, while frames crossed. (Its system time moves with the
// daemons' work by more than the frames cost.)
type cpuCost struct {
	frames  int
	softirq time.Duration
}

func (c cpuCost) String() string {
	if c.frames == 0 {
		return "(no frame arrived)"
	}
	return strconv.Itoa(int(c.softirq.Nanoseconds()/int64(c.frames))) + " ns in softirq (" + strconv.Itoa(c.frames) + " frames)"
}

// cpuPerFrame sends 64-byte frames from a at 5 000 a second for six
// seconds and weighs the guest's softirq time, less what it spends idle
// over as long a time, against the frames that left b. /proc/stat counts
// in ticks of 10 ms: 30 000 frames make a tick 333 ns a frame.
func cpuPerFrame(t *testing.T, v *VM, a, b cable) cpuCost {
	t.Helper()
	const (
		batch  = 50
		period = 10 * time.Millisecond
		span   = 6 * time.Second
		settle = time.Second
	)
	drain(b.conn)
	idle0 := guestCPU(t, v)
	time.Sleep(span + settle)
	idle := guestCPU(t, v)
	done := make(chan int, 1)
	go func() {
		buf := make([]byte, 2048)
		n := 0
		for {
			b.conn.SetReadDeadline(time.Now().Add(span + settle))
			if _, _, err := b.conn.ReadFromUDP(buf); err != nil {
				done <- n
				return
			}
			n++
		}
	}()
	f := frames.UDPFrame(64, 5000, 5001)
	start := time.Now()
	for i := 0; time.Since(start) < span; i++ {
		for range batch {
			if err := a.send(f); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Until(start.Add(time.Duration(i+1) * period)))
	}
	time.Sleep(settle)
	busy := guestCPU(t, v)
	n := <-done
	return cpuCost{frames: n, softirq: busy["softirq"] - idle["softirq"] - (idle["softirq"] - idle0["softirq"])}
}

var cpuSecondsRE = regexp.MustCompile(`^ncpos_cpu_seconds_total\{cpu="[^"]*",mode="([a-z]+)"\} ([0-9.e+-]+)$`)

// guestCPU sums the guest's CPU time by mode over its CPUs.
func guestCPU(t *testing.T, v *VM) map[string]time.Duration {
	t.Helper()
	out := map[string]time.Duration{}
	sc := bufio.NewScanner(strings.NewReader(metricsText(t, v)))
	for sc.Scan() {
		m := cpuSecondsRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		s, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		out[m[1]] += time.Duration(s * float64(time.Second))
	}
	if len(out) == 0 {
		t.Fatal("no ncpos_cpu_seconds_total on /metrics")
	}
	return out
}

// kernelTrouble matches what the kernel prints when it warns or fails:
// WARN_ON ("WARNING: CPU: ..."), BUG and oopses, lockdep's and RCU's
// reports ("WARNING: possible circular locking", "WARNING: suspicious RCU
// usage", ...), KASAN and UBSAN, and failed atomic allocations.
var kernelTrouble = regexp.MustCompile(`WARNING: |BUG: |kernel BUG at|Oops: |general protection fault|KASAN: |UBSAN: |INFO: possible|held lock freed|page allocation failure`)

// noKernelTrouble fails t with every line of the guest's serial console
// where the kernel warns or fails.
func noKernelTrouble(t *testing.T, serial string) {
	t.Helper()
	f, err := os.Open(serial)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if kernelTrouble.MatchString(sc.Text()) {
			t.Errorf("the guest's kernel: %s", sc.Text())
		}
	}
}
