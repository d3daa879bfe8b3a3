package lab

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/ipc/health"
)

// BuildForwarderd compiles services/forwarderd into dir and returns the
// binary's path (see BuildDaemon).
func BuildForwarderd(dir string) (string, error) { return BuildDaemon(dir, "forwarderd") }

// Daemon is a forwarderd running inside the lab's forwarder namespace.
type Daemon struct {
	*Process
	client *forwarderapi.Client
}

// StartForwarderd runs bin in the forwarder namespace bridging the lab's
// segments, with extra flags, and waits until it answers /status.
func (l *Lab) StartForwarderd(bin, runDir string, extra ...string) (*Daemon, error) {
	return l.startForwarderd(bin, runDir, append(l.SegmentArgs(), extra...))
}

// StartForwarderdOn runs bin in the forwarder namespace on the
// configuration file cfg, whose LAN1, LAN2, ... are the lab's ports
// (Ports), so that it can be reconfigured from that file.
func (l *Lab) StartForwarderdOn(bin, runDir, cfg string, extra ...string) (*Daemon, error) {
	return l.startForwarderd(bin, runDir, append([]string{"-config", cfg, "-ports", l.Ports()}, extra...))
}

// startForwarderd runs bin with args and waits until it answers /status.
func (l *Lab) startForwarderd(bin, runDir string, args []string) (*Daemon, error) {
	d := &Daemon{client: forwarderapi.NewClient(runDir, 2*time.Second)}
	ready := func() error {
		_, err := d.client.Status(context.Background())
		return err
	}
	p, err := l.StartProcess("forwarderd", bin, runDir, args, ready, 30*time.Second)
	if err != nil {
		return nil, err
	}
	d.Process = p
	return d, nil
}

// Ports names the lab's ports as a box's front panel would, for
// forwarderd's -ports: segment i's are LAN(2i+1) and LAN(2i+2).
func (l *Lab) Ports() string {
	var out []string
	for i, s := range l.Segments {
		out = append(out, fmt.Sprintf("LAN%d=%s", 2*i+1, s.Ports[0]), fmt.Sprintf("LAN%d=%s", 2*i+2, s.Ports[1]))
	}
	return strings.Join(out, ",")
}

// Reconfigure asks forwarderd to take its configuration file again.
func (d *Daemon) Reconfigure(ctx context.Context) (forwarderapi.Reconfigured, error) {
	return forwarderapi.NewClient(d.RunDir, 30*time.Second).Reconfigure(ctx)
}

// Status fetches /status.
func (d *Daemon) Status(ctx context.Context) (forwarderapi.Status, error) {
	return d.client.Status(ctx)
}

// Report asks /health: liveness and conditions.
func (d *Daemon) Report(ctx context.Context) (health.Report, error) { return d.client.Health(ctx) }

// Metrics fetches /metrics.
func (d *Daemon) Metrics(ctx context.Context) ([]byte, error) { return d.client.Metrics(ctx) }

// Forwarding says nil when forwarderd is live and reports no condition:
// every segment is up and passes what enters it.
func (d *Daemon) Forwarding(ctx context.Context) error {
	r, err := d.Report(ctx)
	switch {
	case err != nil:
		return err
	case !r.Live.Live:
		return fmt.Errorf("forwarderd not live: %s", r.Live)
	case len(r.Conditions) > 0:
		var cs []string
		for _, c := range r.Conditions {
			cs = append(cs, c.String())
		}
		return fmt.Errorf("forwarderd reports %s", strings.Join(cs, "; "))
	}
	return nil
}

// WaitHealthy waits until forwarderd is live and forwarding every segment.
func (d *Daemon) WaitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := d.Forwarding(context.Background())
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("lab: forwarderd not forwarding after %v: %w", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Capture starts a capture on forwarderd and returns its pcapng stream.
func (d *Daemon) Capture(ctx context.Context, r forwarderapi.CaptureRequest) (io.ReadCloser, error) {
	return d.client.Capture(ctx, r)
}
