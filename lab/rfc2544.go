package lab

import (
	"errors"
	"fmt"

	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ncpos/ncpos/bench"
)

// What the lab's RFC 2544 bench measures between the traffic ends.
const (
	TargetForwarder = "forwarder" // ncpos forwarderd, xdp engine, forward mode
	TargetBridge    = "bridge"    // a Linux bridge joining the two ports
)

// TargetOptions configure a lab bench target.
type TargetOptions struct {
	Target   string // TargetForwarder or TargetBridge
	Segments int    // lab segments; 1 when 0
	Ports    []int  // segments that carry traffic; all when nil
	Flows    int    // per stream; 1 when 0
	// Directions is 1 (side a to side b) or 2 (both at once, each
	// traffic end sending one stream and receiving the other); 1 when 0.
	Directions int
	Forwarderd string // forwarderd binary (BuildForwarderd), for TargetForwarder
	RunDir     string // forwarderd's socket and log
	// ForwarderdArgs are extra flags for forwarderd; "-engine xdp -mode
	// forward" when nil.
	ForwarderdArgs []string
}

// Target is a lab with a target between the traffic ends of its
// segments, measured by the self-test's own generators and analyzers
// ([bench.PortTarget]) on side a and side b: the same code that runs on
// an appliance's test ports. It implements [bench.Trial].
type Target struct {
	*bench.PortTarget
	Lab    *Lab
	daemon *Daemon
	undo   []func() error
}

// NewTarget builds a lab (namespaces and veths named ncpt-<id>-*),
// starts the target in it and opens the generators and analyzers. Close
// removes all of it.
func NewTarget(o TargetOptions) (_ *Target, err error) {
	if o.Segments <= 0 {
		o.Segments = 1
	}
	if o.Target != TargetForwarder && o.Target != TargetBridge {
		return nil, fmt.Errorf("unknown target %q, want %s or %s", o.Target, TargetForwarder, TargetBridge)
	}
	if o.Target == TargetForwarder && o.Forwarderd == "" {
		return nil, errors.New("target forwarder needs a forwarderd binary")
	}
	if o.Ports == nil {
		for i := 0; i < o.Segments; i++ {
			o.Ports = append(o.Ports, i)
		}
	}
	for _, p := range o.Ports {
		if p < 0 || p >= o.Segments {
			return nil, fmt.Errorf("unknown port seg%d: the lab has seg0 to seg%d", p, o.Segments-1)
		}
	}
	if o.Directions == 0 {
		o.Directions = 1
	}
	if o.Directions != 1 && o.Directions != 2 {
		return nil, fmt.Errorf("%d directions: want 1 or 2", o.Directions)
	}
	id := "b" + strconv.FormatInt(int64(rand.IntN(36*36*36)), 36)
	l, err := New(Config{ID: id, Segments: o.Segments})
	if err != nil {
		return nil, err
	}
	t := &Target{Lab: l}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	// Every segment's a → b streams first, then their b → a streams.
	var streams []bench.PortStream
	for _, p := range o.Ports {
		seg := l.Segments[p]
		streams = append(streams, bench.PortStream{Name: "seg" + strconv.Itoa(p),
			Sender:   bench.PortEnd{Ifname: seg.HostIfs[0], NS: seg.Hosts[0]},
			Receiver: bench.PortEnd{Ifname: seg.HostIfs[1], NS: seg.Hosts[1]}})
	}
	if o.Directions == 2 {
		for _, s := range streams[:len(o.Ports)] {
			streams = append(streams, s.Reverse())
		}
	}
	if t.PortTarget, err = bench.NewPorts(streams, o.Flows); err != nil {
		return nil, err
	}
	switch o.Target {
	case TargetForwarder:
		args := o.ForwarderdArgs
		if args == nil {
			args = []string{"-engine", "xdp", "-mode", "forward"}
		}
		if o.RunDir == "" {
			o.RunDir = filepath.Join(os.TempDir(), "ncpos-bench-"+id)
		}
		if t.daemon, err = l.StartForwarderd(o.Forwarderd, o.RunDir, args...); err != nil {
			return nil, err
		}
		if err := t.daemon.WaitHealthy(15 * time.Second); err != nil {
			return nil, err
		}
	case TargetBridge:
		for _, p := range o.Ports {
			undo, err := l.Bridge(p)
			if err != nil {
				return nil, err
			}
			t.undo = append(t.undo, undo)
			// With GRO on, a veth takes the kernel generator's XDP
			// frames in (by NAPI) without an XDP program of its own.
			for _, port := range l.Segments[p].Ports {
				if err := l.FW.Do(func() error { return setGRO(port, true) }); err != nil {
					return nil, err
				}
			}
		}
	}
	return t, nil
}

// Close stops the target and removes the lab.
func (t *Target) Close() error {
	var errs []error
	if t.daemon != nil {
		errs = append(errs, t.daemon.Stop())
	}
	if t.PortTarget != nil {
		errs = append(errs, t.PortTarget.Close())
	}
	for _, u := range t.undo {
		errs = append(errs, u())
	}
	errs = append(errs, t.Lab.Close())
	return errors.Join(errs...)
}
