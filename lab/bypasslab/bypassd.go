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
	"fmt"
	"path/filepath"
	"time"

	"github.com/ncpos/ncpos/bypass"
	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/lab"
)

// BuildBypassd compiles services/bypassd into dir and returns the binary.
// It must run inside the ncpos module.
func BuildBypassd(dir string) (string, error) { return lab.BuildDaemon(dir, "bypassd") }

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

// Bypassd is a bypassd running in the lab's forwarder namespace. Its
// Stop (SIGTERM) has bypassd set every pair to bypass before it exits.
type Bypassd struct {
	*lab.Process // RunDir is shared with forwarderd: bypassd finds forwarderd.sock there
	Ctl          *bypassapi.Client
}

// StartBypassd runs bin in the forwarder namespace with a sim relay per
// segment and extra flags, and waits until it answers /status. runDir
// must be forwarderd's run folder.
func StartBypassd(l *lab.Lab, bin, runDir string, extra ...string) (*Bypassd, error) {
	ctl := bypassapi.NewClient(runDir, 2*time.Second)
	args := append([]string{"-log", filepath.Join(runDir, "bypass-transitions.log"), "-overrides", filepath.Join(runDir, "bypass-overrides.json")}, SimPairArgs(l)...)
	ready := func() error {
		_, err := ctl.Status(context.Background())
		return err
	}
	p, err := l.StartProcess("bypassd", bin, runDir, append(args, extra...), ready, 15*time.Second)
	if err != nil {
		return nil, err
	}
	return &Bypassd{Process: p, Ctl: ctl}, nil
}

// Status fetches bypassd's /status.
func (d *Bypassd) Status() (bypassapi.Status, error) { return d.Ctl.Status(context.Background()) }

// Pair returns the status of pair i.
func (d *Bypassd) Pair(i int) (bypassapi.PairStatus, error) {
	st, err := d.Status()
	if err != nil {
		return bypassapi.PairStatus{}, err
	}
	for _, p := range st.Pairs {
		if p.Name == PairName(i) {
			return p, nil
		}
	}
	return bypassapi.PairStatus{}, fmt.Errorf("bypasslab: no %s in bypassd's status", PairName(i))
}

// WaitPair waits until pair i's relay reads back state.
func (d *Bypassd) WaitPair(i int, state bypassapi.State, timeout time.Duration) (bypassapi.PairStatus, error) {
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

// RelayInfo is what a sim relay says, read in the kernel.
type RelayInfo struct {
	State   bypassapi.State
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
