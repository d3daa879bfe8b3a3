package bypasslab

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bypass"
	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/ipc/health"
)

// TestCutLinksRelay runs the lab with a relay that, like a hardware one,
// cuts the NIC off in bypass (the ports show no link): it must not keep
// itself in bypass because of its own cut, must carry frames while
// forwarderd is dead, and with a cable pulled on one side it probes normal
// with a damped hold-down and returns to normal once the cable is back.
func TestCutLinksRelay(t *testing.T) {
	r := newRig(t, "-sim-cut-links")
	p := r.wait(bypassapi.Normal, holdDown+10*time.Second)
	if p.Caps == nil || !p.Caps.LinkDownInBypass {
		t.Fatalf("caps %+v: want the relay to cut the links in bypass", p.Caps)
	}
	r.passes("through the forwarder", 50)

	// forwarderd dies: bypass, the ports lose their link, the relay carries.
	if err := r.fwd.Kill(); err != nil {
		t.Fatal(err)
	}
	r.wait(bypassapi.Bypass, 2*time.Second)
	r.passes("through the cut-off relay", 50)
	// It comes back: its ports show no link while the relay is in bypass,
	// which must not keep the pair there.
	d, err := r.l.StartForwarderd(forwarderdBin, r.dir, "-interval", "200ms")
	if err != nil {
		t.Fatal(err)
	}
	r.fwd = d
	sawCut := false
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && !sawCut; time.Sleep(100 * time.Millisecond) {
		rep, err := d.Report(context.Background())
		sawCut = err == nil && rep.Live.Live && len(rep.Segment("seg0")) == 2 && health.Only(rep.Segment("seg0"), health.LinkDown)
	}
	if !sawCut {
		t.Error("forwarderd behind the cut-off relay did not report both links down while live")
	}
	r.wait(bypassapi.Normal, holdDown+10*time.Second)
	if err := d.WaitHealthy(5 * time.Second); err != nil {
		out, _ := exec.Command("ip", "-n", r.l.FW.Name, "-d", "link").CombinedOutput()
		st, _ := r.bp.Status()
		t.Fatalf("links not back after the relay returned to normal: %v\n%s\n%+v", err, out, st.Log)
	}
	r.passes("through the restarted forwarder", 50)

	// A cable pulled on side b: the port loses its link (its veth peer,
	// the far end, loses carrier with it).
	setCable := func(up bool) {
		t.Helper()
		l, err := r.l.FW.Link(r.l.Segments[0].Ports[1])
		if err == nil {
			err = r.l.SetLinkUp(l, up)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	pulled := time.Now()
	setCable(false)
	t.Cleanup(func() { setCable(true) })
	// Just back in normal, the ports have LinkSettle to find their cables.
	r.wait(bypassapi.Bypass, bypass.DefaultLinkSettle+2*time.Second)
	time.Sleep(8 * holdDown)
	st, err := r.bp.Pair(0)
	if err != nil {
		t.Fatal(err)
	}
	probes := st.Counts[bypassapi.Normal]
	t.Logf("cable out %v: relay %s, %d transitions to normal in all, hold-down now %v", time.Since(pulled).Round(100*time.Millisecond), st.State, probes, time.Duration(st.HoldDown))
	if time.Duration(st.HoldDown) <= holdDown {
		t.Errorf("hold-down %v after repeated failed probes, want it damped above %v", time.Duration(st.HoldDown), holdDown)
	}
	// Plugged back: normal within the hold-down in force and a little.
	hd := time.Duration(st.HoldDown)
	plugged := time.Now()
	setCable(true)
	r.wait(bypassapi.Normal, hd+holdDown+5*time.Second)
	if err := d.WaitHealthy(5 * time.Second); err != nil {
		out, _ := exec.Command("ip", "-n", r.l.FW.Name, "-d", "link").CombinedOutput()
		st, _ := r.bp.Status()
		for _, e := range st.Log {
			t.Logf("log %v %s %s->%s %s", e.Time.Format("15:04:05.000"), e.Kind, e.From, e.To, e.Cause)
		}
		t.Fatalf("%v\n%s", err, out)
	}
	back := time.Since(plugged)
	t.Logf("replug to relay normal and the segment forwarding: %v (hold-down in force %v)", back.Round(100*time.Millisecond), hd)
	if back > hd+2*time.Second {
		t.Errorf("forwarding %v after the replug, want within the hold-down in force (%v) + 2 s", back, hd)
	}
	r.passes("after the replug", 50)
}
