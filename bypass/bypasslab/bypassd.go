// Package bypasslab runs bypassd with the sim relay in the namespace lab
// (github.com/ncpos/ncpos/lab) and measures failover: how long after
// forwarderd dies frames cross the segment again through the relay, and
// how many are lost. `ncpos lab failover` and the lab tests use it.
//
// The sim relay (bypass.Sim) is installed by bypassd in the forwarder's
// namespace on the segment's two port interfaces, so a frame entering a
// port meets forwarderd's XDP program first while it is attached and the
// relay's tc program otherwise. The relay and its controller timer are
// kernel state (a tc filter and the BPF map its program holds), not a
// process: they survive bypassd, and the timer falls to bypass when
// nobody kicks it, which is what the tests check by killing bypassd.
package bypasslab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ncpos/ncpos/bypass"
	"github.com/ncpos/ncpos/lab"
)

// BuildBypassd compiles services/bypassd into dir and returns the binary.
// It must run inside the ncpos module.
func BuildBypassd(dir string) (string, error) {
	out := filepath.Join(dir, "bypassd")
	cmd := exec.Command("go", "build", "-o", out, "github.com/ncpos/ncpos/services/bypassd")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("bypasslab: building bypassd: %w\n%s", err, b)
	}
	return out, nil
}

// PairName is the sim pair of segment i.
func PairName(i int) string { return fmt.Sprintf("pair%d", i) }

// SimPairArgs are bypassd's -sim-pair flags for the lab: one relay per
// segment, between the segment's two port interfaces.
func SimPairArgs(l *lab.Lab) []string {
	var args []string
	for i, s := range l.Segments {
		args = append(args, "-sim-pair", fmt.Sprintf("%s=%s,%s,%s", PairName(i), s.Name, s.Ports[0], s.Ports[1]))
	}
	return args
}

// Bypassd is a bypassd running in the lab's forwarder namespace.
type Bypassd struct {
	RunDir string // shared with forwarderd: bypassd finds forwarderd.sock there
	Log    string
	cmd    *exec.Cmd
	done   chan error
	Ctl    *bypass.Control
}

// StartBypassd runs bin in the forwarder namespace with a sim relay per
// segment and extra flags, and waits until it answers /status. runDir
// must be forwarderd's run folder.
func StartBypassd(l *lab.Lab, bin, runDir string, extra ...string) (*Bypassd, error) {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(runDir, "bypassd.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	args := append([]string{"netns", "exec", l.FW.Name, bin, "-log", filepath.Join(runDir, "bypass-transitions.log")}, SimPairArgs(l)...)
	args = append(args, extra...)
	cmd := exec.Command("ip", args...)
	cmd.Env = append(os.Environ(), "NCPOS_RUN_DIR="+runDir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bypasslab: starting bypassd: %w", err)
	}
	d := &Bypassd{RunDir: runDir, Log: logPath, cmd: cmd, done: make(chan error, 1), Ctl: bypass.NewControl(runDir, 2*time.Second)}
	go func() { d.done <- cmd.Wait() }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := d.Ctl.Status(context.Background())
		if err == nil {
			return d, nil
		}
		select {
		case werr := <-d.done:
			b, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("bypasslab: bypassd exited (%v):\n%s", werr, b)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.Kill()
			return nil, fmt.Errorf("bypasslab: bypassd did not answer in 15s: %w", err)
		}
	}
}

// Pid is bypassd's process id.
func (d *Bypassd) Pid() int { return d.cmd.Process.Pid }

// Status fetches bypassd's /status.
func (d *Bypassd) Status() (bypass.Status, error) { return d.Ctl.Status(context.Background()) }

// Pair returns the status of pair i.
func (d *Bypassd) Pair(i int) (bypass.PairStatus, error) {
	st, err := d.Status()
	if err != nil {
		return bypass.PairStatus{}, err
	}
	for _, p := range st.Pairs {
		if p.Name == PairName(i) {
			return p, nil
		}
	}
	return bypass.PairStatus{}, fmt.Errorf("bypasslab: no %s in bypassd's status", PairName(i))
}

// WaitPair waits until pair i's relay reads back state.
func (d *Bypassd) WaitPair(i int, state bypass.State, timeout time.Duration) (bypass.PairStatus, error) {
	deadline := time.Now().Add(timeout)
	for {
		p, err := d.Pair(i)
		if err == nil && p.State == state {
			return p, nil
		}
		if time.Now().After(deadline) {
			return p, fmt.Errorf("bypasslab: %s is %s (wanted %s, cause %q) after %v: %v", PairName(i), p.State, state, p.Cause, timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Kill sends SIGKILL and waits for the process to go.
func (d *Bypassd) Kill() error {
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	err := <-d.done
	d.done <- err
	return nil
}

// Stop sends SIGTERM (bypassd sets every pair to bypass and exits) and
// waits up to 10s.
func (d *Bypassd) Stop() error {
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case err := <-d.done:
		d.done <- err
		return err
	case <-time.After(10 * time.Second):
		return d.Kill()
	}
}

// RelayInfo is what a sim relay says, read in the kernel.
type RelayInfo struct {
	State   bypass.State
	Expired bool // the controller timer ran out
	bypass.SimStats
}

// Relay reads segment i's sim relay directly in the kernel (without
// bypassd, which may be dead).
func Relay(l *lab.Lab, i int) (info RelayInfo, err error) {
	s := l.Segments[i]
	err = l.FW.Do(func() error {
		r, err := bypass.FindSim(PairName(i), s.Ports[0], s.Ports[1], 0)
		if err != nil {
			return err
		}
		defer r.Close()
		if info.State, err = r.Get(); err != nil {
			return err
		}
		if info.Expired, err = r.TimerExpired(); err != nil {
			return err
		}
		info.SimStats, err = r.Stats()
		return err
	})
	return info, err
}

// RelayTime converts a relay timestamp (CLOCK_MONOTONIC ns) to wall time,
// given a pair of readings of both clocks taken together.
func RelayTime(mono uint64, refMono uint64, ref time.Time) time.Time {
	if mono == 0 {
		return time.Time{}
	}
	return ref.Add(time.Duration(int64(mono) - int64(refMono)))
}
