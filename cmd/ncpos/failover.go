package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/ncpos/ncpos/bypass"
	"github.com/ncpos/ncpos/lab"
	"github.com/ncpos/ncpos/lab/bypasslab"
)

// labFailover is `ncpos lab failover`: it builds a one-segment lab
// (namespaces ncpt-fail-*) with forwarderd and bypassd driving the sim
// relay, kills forwarderd under traffic -reps times, and prints the gap
// from the kill to the first frame received through the relay and the
// frames lost, with min/median/max. Everything it creates is removed when
// it ends.
func labFailover(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("lab failover", flag.ExitOnError)
	reps := fs.Int("reps", 10, "repetitions")
	interval := fs.Duration("interval", time.Millisecond, "time between test frames")
	holdDown := fs.Duration("hold-down", time.Second, "bypassd hold-down before the relay returns to normal between repetitions")
	budget := fs.Duration("budget", bypass.DefaultBudget, "bypassd's detection budget")
	engine := fs.String("engine", "xdp", "forwarderd engine: xdp or afxdp")
	fs.Parse(args)
	if os.Geteuid() != 0 {
		return errors.New("the lab needs root (network namespaces, XDP)")
	}
	dir, err := os.MkdirTemp("", "ncpos-failover")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Println("building forwarderd and bypassd ...")
	fwd, err := lab.BuildForwarderd(dir)
	if err != nil {
		return err
	}
	bpd, err := bypasslab.BuildBypassd(dir)
	if err != nil {
		return err
	}
	fmt.Printf("killing forwarderd %d times under traffic (a frame every %v):\n", *reps, *interval)
	rep, err := bypasslab.Failover(ctx, bypasslab.FailoverOptions{
		Forwarderd: fwd, Bypassd: bpd, RunDir: dir, Reps: *reps, Interval: *interval,
		HoldDown: *holdDown, Budget: *budget, Engine: *engine, Out: os.Stdout,
	})
	if rep != nil && len(rep.Reps) > 0 {
		fmt.Println()
		rep.Print(os.Stdout)
	}
	return err
}
