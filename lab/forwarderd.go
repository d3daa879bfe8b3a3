package lab

import (
	"context"
	"fmt"
	"time"

	"github.com/ncpos/ncpos/forwarder"
	"github.com/ncpos/ncpos/ipc"
)

// BuildForwarderd compiles services/forwarderd into dir and returns the
// binary's path (see BuildDaemon).
func BuildForwarderd(dir string) (string, error) { return BuildDaemon(dir, "forwarderd") }

// Daemon is a forwarderd running inside the lab's forwarder namespace.
type Daemon struct {
	*Process
	client *ipc.Client
}

// StartForwarderd runs bin in the forwarder namespace bridging the lab's
// segments, with extra flags, and waits until it answers /status.
func (l *Lab) StartForwarderd(bin, runDir string, extra ...string) (*Daemon, error) {
	d := &Daemon{client: ipc.NewClient(runDir, "forwarderd", 2*time.Second)}
	ready := func() error {
		var st forwarder.Status
		return d.client.Status(context.Background(), &st)
	}
	p, err := l.StartProcess("forwarderd", bin, runDir, append(l.SegmentArgs(), extra...), ready, 30*time.Second)
	if err != nil {
		return nil, err
	}
	d.Process = p
	return d, nil
}

// Status fetches /status.
func (d *Daemon) Status(ctx context.Context) (forwarder.Status, error) {
	var st forwarder.Status
	err := d.client.Status(ctx, &st)
	return st, err
}

// Health asks /healthz.
func (d *Daemon) Health(ctx context.Context) error { return d.client.Health(ctx) }

// Metrics fetches /metrics.
func (d *Daemon) Metrics(ctx context.Context) ([]byte, error) { return d.client.Metrics(ctx) }

// WaitHealthy waits until /healthz says ok.
func (d *Daemon) WaitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := d.Health(context.Background())
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("lab: forwarderd not healthy after %v: %w", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
