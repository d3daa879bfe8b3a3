package bypasslab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ncpos/ncpos/bypass"
	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/lab"
)

// FailoverOptions configure a failover measurement.
type FailoverOptions struct {
	Forwarderd, Bypassd string        // binaries
	RunDir              string        // sockets and logs
	ID                  string        // lab ID (default "fail": namespaces ncpt-fail-*)
	Reps                int           // default 10
	Interval            time.Duration // between test frames (default 1ms)
	HoldDown            time.Duration // bypassd -hold-down (default 1s, to keep runs short)
	Budget              time.Duration // bypassd -budget (default 300ms)
	Engine              string        // forwarderd -engine (default xdp)
	Before, After       time.Duration // traffic before and after the kill (300ms, 1s)
	Out                 io.Writer     // progress, one line per repetition
}

func (o *FailoverOptions) defaults() {
	if o.ID == "" {
		o.ID = "fail"
	}
	if o.Reps <= 0 {
		o.Reps = 10
	}
	if o.Interval <= 0 {
		o.Interval = time.Millisecond
	}
	if o.HoldDown <= 0 {
		o.HoldDown = time.Second
	}
	if o.Budget <= 0 {
		o.Budget = bypass.DefaultBudget
	}
	if o.Engine == "" {
		o.Engine = "xdp"
	}
	if o.Before <= 0 {
		o.Before = 300 * time.Millisecond
	}
	if o.After <= 0 {
		o.After = time.Second
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
}

// Rep is one repetition: forwarderd killed under traffic.
type Rep struct {
	Outage
	Relay bypassapi.State // bypassd's relay afterwards, as read back
	Cause string          // bypassd's cause for it
}

// FailoverReport is the result of Failover.
type FailoverReport struct {
	Opts FailoverOptions
	Reps []Rep
}

// Failover builds a one-segment lab with forwarderd and bypassd (sim
// relay), and Reps times: waits for the relay to be normal, sends test
// frames every Interval through the forwarder, SIGKILLs forwarderd, and
// measures the time from the kill to the first frame received through the
// relay after the outage, and the frames lost; then restarts forwarderd.
// Everything it creates is removed when it returns, failed or not.
func Failover(ctx context.Context, o FailoverOptions) (_ *FailoverReport, err error) {
	o.defaults()
	if err := os.MkdirAll(o.RunDir, 0o755); err != nil {
		return nil, err
	}
	l, err := lab.New(lab.Config{ID: o.ID, Segments: 1})
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := l.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := l.Hostify(); err != nil {
		return nil, err
	}
	fwdArgs := []string{"-engine", o.Engine, "-interval", "200ms"}
	fwd, err := l.StartForwarderd(o.Forwarderd, o.RunDir, fwdArgs...)
	if err != nil {
		return nil, err
	}
	defer func() { fwd.Kill() }()
	// Every kill is a flap to bypassd, and its damping would double the
	// hold-down each repetition; the measurement is about the way into
	// bypass, so the hold-down is kept flat.
	bp, err := StartBypassd(l, o.Bypassd, o.RunDir, "-hold-down", o.HoldDown.String(), "-max-hold-down", o.HoldDown.String(),
		"-budget", o.Budget.String(), "-sim-timer", "1s")
	if err != nil {
		return nil, err
	}
	defer bp.Kill()
	recv, err := NewReceiver(l, 0, 1)
	if err != nil {
		return nil, err
	}
	defer recv.Close()

	defer func() {
		if err != nil && !errors.Is(err, context.Canceled) {
			err = fmt.Errorf("%w\n%s", err, logTails(o.RunDir))
		}
	}()
	rep := &FailoverReport{Opts: o}
	for i := 0; i < o.Reps; i++ {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if err := fwd.WaitHealthy(20 * time.Second); err != nil {
			return rep, err
		}
		if _, err := bp.WaitPair(0, bypassapi.Normal, o.HoldDown+20*time.Second); err != nil {
			return rep, err
		}
		recv.Reset()
		base := uint64(i+1) << 32
		stream, err := StartStream(l, 0, o.Interval, base)
		if err != nil {
			return rep, err
		}
		time.Sleep(o.Before)
		if recv.Count() == 0 {
			stream.Stop()
			return rep, fmt.Errorf("repetition %d: no frames cross the forwarder before the kill", i+1)
		}
		mono, at := bypass.Monotonic(), time.Now()
		if err := fwd.Kill(); err != nil {
			stream.Stop()
			return rep, err
		}
		time.Sleep(o.After)
		if err := stream.Stop(); err != nil {
			return rep, err
		}
		time.Sleep(50 * time.Millisecond) // frames in flight
		info, err := Relay(l, 0)
		if err != nil {
			return rep, err
		}
		r := Rep{Outage: Analyse(at, RelayTime(info.FirstCarried, mono, at), base, stream.Sent(), recv.Arrivals())}
		if p, err := bp.Pair(0); err == nil {
			r.Relay, r.Cause = p.State, p.Cause
		}
		rep.Reps = append(rep.Reps, r)
		fmt.Fprintf(o.Out, "  %2d: %s\n", i+1, r)
		if !r.Resumed {
			return rep, fmt.Errorf("repetition %d: no frame crossed after forwarderd was killed (relay %s: %s)", i+1, r.Relay, r.Cause)
		}
		if att, err := l.AttachedXDP(); err != nil || len(att) > 0 {
			return rep, fmt.Errorf("repetition %d: XDP still attached after the kill: %v %v", i+1, att, err)
		}
		if fwd, err = l.StartForwarderd(o.Forwarderd, o.RunDir, fwdArgs...); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func (r Rep) String() string {
	if !r.Resumed {
		return fmt.Sprintf("no frame crossed after the kill; lost %d of %d (relay %s)", r.Lost, r.Sent, r.Relay)
	}
	return fmt.Sprintf("first frame through the relay received %s after the kill, %d of %d frames lost (relay %s; longest silence %s)",
		ms(r.Gap), r.Lost, r.Sent, r.Relay, ms(r.Silence))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

// Summary is min, median and max.
type Summary struct{ Min, Median, Max float64 }

func summarise(v []float64) Summary {
	if len(v) == 0 {
		return Summary{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Summary{s[0], m, s[len(s)-1]}
}

// Gaps summarises the gaps in milliseconds.
func (r *FailoverReport) Gaps() Summary {
	var v []float64
	for _, x := range r.Reps {
		v = append(v, float64(x.Gap)/float64(time.Millisecond))
	}
	return summarise(v)
}

// Lost summarises the frames lost.
func (r *FailoverReport) Lost() Summary {
	var v []float64
	for _, x := range r.Reps {
		v = append(v, float64(x.Lost))
	}
	return summarise(v)
}

// Print writes the figures.
func (r *FailoverReport) Print(w io.Writer) {
	g, l := r.Gaps(), r.Lost()
	fmt.Fprintf(w, "failover over %d repetitions (SIGKILL forwarderd -> first frame through the sim relay; a frame every %v, budget %v, flat hold-down %v):\n",
		len(r.Reps), r.Opts.Interval, r.Opts.Budget, r.Opts.HoldDown)
	fmt.Fprintf(w, "  gap          min %7.1f ms   median %7.1f ms   max %7.1f ms\n", g.Min, g.Median, g.Max)
	fmt.Fprintf(w, "  frames lost  min %7.0f      median %7.0f      max %7.0f\n", l.Min, l.Median, l.Max)
	verdict := "met"
	if g.Median >= 250 {
		verdict = "NOT met"
	}
	fmt.Fprintf(w, "  target median under 250 ms: %s\n", verdict)
}

// logTails returns the last lines of the daemons' logs in dir.
func logTails(dir string) string {
	var b strings.Builder
	for _, name := range []string{"forwarderd.log", "bypassd.log"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		fmt.Fprintf(&b, "--- %s (last lines):\n%s\n", name, strings.Join(lines[max(len(lines)-15, 0):], "\n"))
	}
	return b.String()
}
