package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ncpos/ncpos/forwarder"
	"github.com/ncpos/ncpos/ipc"
)

// BuildForwarderd compiles services/forwarderd into dir and returns the
// binary's path. It must run inside the ncpos module. With
// NCPOS_LAB_RACE=1 the binary is built with the race detector.
func BuildForwarderd(dir string) (string, error) {
	out := filepath.Join(dir, "forwarderd")
	args := []string{"build", "-o", out}
	if os.Getenv("NCPOS_LAB_RACE") == "1" {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "github.com/ncpos/ncpos/services/forwarderd")...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("lab: building forwarderd: %w\n%s", err, b)
	}
	return out, nil
}

// Daemon is a forwarderd running inside the lab's forwarder namespace.
type Daemon struct {
	RunDir string // its NCPOS_RUN_DIR: socket and log
	Log    string
	cmd    *exec.Cmd
	done   chan error
	client *ipc.Client
}

// StartForwarderd runs bin in the forwarder namespace (through `ip netns
// exec`, which also gives it the namespace's /sys) bridging the lab's
// segments, with extra flags, and waits until it answers /status.
func (l *Lab) StartForwarderd(bin, runDir string, extra ...string) (*Daemon, error) {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(runDir, "forwarderd.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	args := append([]string{"netns", "exec", l.FW.Name, bin}, l.SegmentArgs()...)
	args = append(args, extra...)
	cmd := exec.Command("ip", args...)
	cmd.Env = append(os.Environ(), "NCPOS_RUN_DIR="+runDir)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, so that a Ctrl-C of `ncpos lab up` does not
	// reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("lab: starting forwarderd: %w", err)
	}
	d := &Daemon{RunDir: runDir, Log: logPath, cmd: cmd, done: make(chan error, 1),
		client: ipc.NewClient(runDir, "forwarderd", 2*time.Second)}
	go func() { d.done <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var st forwarder.Status
		err := d.client.Status(context.Background(), &st)
		if err == nil {
			return d, nil
		}
		select {
		case werr := <-d.done:
			b, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("lab: forwarderd exited (%v):\n%s", werr, b)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.Kill()
			return nil, fmt.Errorf("lab: forwarderd did not answer in 30s: %w", err)
		}
	}
}

// Pid is the daemon's process id (ip netns exec execs it in place).
func (d *Daemon) Pid() int { return d.cmd.Process.Pid }

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

// Kill sends SIGKILL, as a crash would, and waits for the process to go.
func (d *Daemon) Kill() error {
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-d.done
	d.done <- nil
	return nil
}

// Stop asks the daemon to exit (SIGTERM) and kills it after 10s.
func (d *Daemon) Stop() error {
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case err := <-d.done:
		d.done <- err
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("lab: forwarderd: %w", err)
		}
		return nil
	case <-time.After(10 * time.Second):
		return d.Kill()
	}
}
