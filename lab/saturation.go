package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// saturation runs xdp forward with the ingress port's NAPI in its own
// kernel thread on the forwarding core, so that the generator (on CPU 0)
// can offer more than the datapath can take. The generator is slowed frame
// by frame (a busy loop in its program, so that the load stays smooth) to
// offer a sweep of rates up to flat out: the maximum is the most any of
// them got through, and the report picks the point offered nearest 150 %
// of it. The devmap reference goes through the same sweep, so that what
// the veth harness does under overload is not taken for ncpos.
func (b *bench) saturation(ctx context.Context, frame []byte) (*Saturation, error) {
	if runtime.NumCPU() < 2 {
		return nil, errors.New("needs two CPUs")
	}
	d, err := b.lab.StartForwarderd(b.o.Forwarderd, b.o.RunDir, "-engine", "xdp", "-mode", "forward")
	if err != nil {
		return nil, err
	}
	if err := d.WaitHealthy(10 * time.Second); err != nil {
		d.Stop()
		return nil, err
	}
	sat, err := b.loadCurve(ctx, frame, "xdp forward")
	d.Stop()
	if err != nil {
		return nil, err
	}
	// The same curve through the reference tells the harness's own
	// behaviour under overload (veth rings, NAPI threads) from ncpos's.
	detach, err := b.attachReference()
	if err != nil {
		return nil, err
	}
	defer detach()
	if sat.Reference, err = b.loadCurve(ctx, frame, "reference"); err != nil {
		return nil, err
	}
	return sat, nil
}

// loadCurve measures whatever datapath is attached to the first port with
// its NAPI in a kernel thread of its own.
func (b *bench) loadCurve(ctx context.Context, frame []byte, what string) (*Saturation, error) {
	fw, seg := b.lab.FW, b.lab.Segments[0]
	// The datapath (p0a's NAPI) and the sink (t0b's) each get a kernel
	// thread on the forwarding core; a veth has NAPI instances only while
	// an XDP program is attached, so this comes after the datapath's.
	threaded := func(ns *Netns, ifname, on string) error {
		out, err := exec.Command("ip", "netns", "exec", ns.Name, "sh", "-c",
			fmt.Sprintf("echo %s > /sys/class/net/%s/threaded", on, ifname)).CombinedOutput()
		if err != nil {
			return fmt.Errorf("threaded NAPI on %s: %v: %s", ifname, err, out)
		}
		return nil
	}
	for _, t := range []struct {
		ns     *Netns
		ifname string
	}{{fw, seg.Ports[0]}, {seg.Hosts[1], seg.HostIfs[1]}} {
		if err := threaded(t.ns, t.ifname, "1"); err != nil {
			return nil, err
		}
		defer threaded(t.ns, t.ifname, "0")
	}
	pinNAPIThreads("napi/"+b.lab.Name(""), runtime.NumCPU()-1)

	size := len(frame) + 4
	// run returns the forwarded and offered rates of the best window, and
	// the generator's average rate, which calibrates the throttle.
	label := what
	run := func(step string, spin uint32) (fwd, offered, avg float64, err error) {
		if err := ctx.Err(); err != nil {
			return 0, 0, 0, err
		}
		g, err := b.lab.ThrottledGenerator(0, 0, 0, spin)
		if err != nil {
			return 0, 0, 0, err
		}
		defer g.Close()
		fwd, offered, avg, err = b.measureAvg(ctx, g, frame, SinkID(0, 1), 0)
		if err == nil {
			fmt.Fprintf(b.o.Out, "  %4d bytes  own core, %-26s offered %6.2f -> %6.2f Mpps\n", size, label+", "+step, offered/1e6, fwd/1e6)
		}
		return fwd, offered, avg, err
	}
	// A load curve, from light to flat out: the maximum is the most that
	// got through; past it, the forwarded rate should stay flat.
	sat := &Saturation{}
	for _, spin := range []uint32{400, 200, 100, 50, 25, 10, 0} {
		fwd, off, _, err := run(fmt.Sprintf("spin %d", spin), spin)
		if err != nil {
			return nil, err
		}
		sat.Curve = append(sat.Curve, LoadPoint{Offered: off, Forwarded: fwd})
		sat.Max = max(sat.Max, fwd)
	}
	// The point offered closest to 150 % of the maximum.
	for _, p := range sat.Curve {
		if sat.Offered == 0 || abs(p.Offered-1.5*sat.Max) < abs(sat.Offered-1.5*sat.Max) {
			sat.Offered, sat.Forwarded = p.Offered, p.Forwarded
		}
	}
	return sat, nil
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// pinNAPIThreads moves the kernel threads whose name starts with prefix
// (threaded NAPI: "napi/<dev>-<id>", cut to 15 characters) to cpu and runs
// them SCHED_RR, the precedence softirq processing has over processes on
// an appliance (otherwise whatever else the host runs on that core would
// be measured, not the datapath), taking turns among themselves.
func pinNAPIThreads(prefix string, cpu int) {
	prefix = prefix[:min(len(prefix), 15)]
	entries, _ := os.ReadDir("/proc")
	var set unix.CPUSet
	set.Set(cpu)
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(comm)), prefix) {
			unix.SchedSetaffinity(pid, &set)
			unix.SchedSetAttr(pid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_RR, Priority: 50}, 0)
		}
	}
}
