package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ncpos/ncpos/forwarder"
	"github.com/ncpos/ncpos/internal/procs"
	"github.com/ncpos/ncpos/lab"
)

// labID names the lab that `ncpos lab up` leaves running: every namespace
// and interface of it is ncpt-lab-*.
const labID = "lab"

// labRunDir holds the lab's forwarderd socket, log and pid file.
var labRunDir = filepath.Join(os.TempDir(), "ncpos-lab")

func runLab(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: ncpos lab up|down|failover [flags]")
	}
	switch args[0] {
	case "up":
		return labUp(args[1:])
	case "down":
		return labDown()
	case "bench":
		return errors.New("the lab's comparisons are `ncpos bench -compare` now")
	case "failover":
		return labFailover(ctx, args[1:])
	}
	return fmt.Errorf("unknown lab command %q, want up, down or failover", args[0])
}

// labUp builds a lab and leaves forwarderd running in it, for poking at by
// hand: `ip netns exec ncpt-lab-0a ...` sends from one side, and the status
// is on the socket in labRunDir.
func labUp(args []string) error {
	fs := flag.NewFlagSet("lab up", flag.ExitOnError)
	segments := fs.Int("segments", 1, "number of segments")
	engine := fs.String("engine", forwarder.EngineXDP, "xdp or afxdp")
	mode := fs.String("mode", forwarder.ModeForward, "forward or service")
	fs.Parse(args)
	if err := labDown(); err != nil {
		return err
	}
	l, err := lab.New(lab.Config{ID: labID, Segments: *segments})
	if err != nil {
		return err
	}
	err = l.Hostify()
	var bin string
	if err == nil {
		bin, err = lab.BuildForwarderd(labRunDir)
	}
	if err == nil {
		var d *lab.Daemon
		d, err = l.StartForwarderd(bin, labRunDir, "-engine", *engine, "-mode", *mode)
		if err == nil {
			err = os.WriteFile(filepath.Join(labRunDir, "forwarderd.pid"), []byte(strconv.Itoa(d.Pid())), 0o644)
		}
	}
	if err != nil {
		l.Close()
		return err
	}
	fmt.Printf("lab up: forwarderd (%s, %s) in namespace %s, log %s\n", *engine, *mode, l.FW.Name, filepath.Join(labRunDir, "forwarderd.log"))
	for i, s := range l.Segments {
		fmt.Printf("  %s: %s (198.18.%d.1) [%s] <-> [%s] (198.18.%d.2) %s\n", s.Name, s.Hosts[0].Name, i, s.Ports[0], s.Ports[1], i, s.Hosts[1].Name)
	}
	fmt.Printf("try:    ip netns exec %s ping -c 3 198.18.0.2\n", l.Segments[0].Hosts[0].Name)
	fmt.Printf("status: curl --unix-socket %s http://x/status\nstop:   ncpos lab down\n", filepath.Join(labRunDir, "forwarderd.sock"))
	return nil
}

// labDown stops the lab's forwarderd and removes every ncpt-lab-*
// namespace and interface.
func labDown() error {
	pidFile := filepath.Join(labRunDir, "forwarderd.pid")
	if b, err := os.ReadFile(pidFile); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && isForwarderd(pid) {
			syscall.Kill(pid, syscall.SIGTERM)
			for i := 0; i < 50 && isForwarderd(pid); i++ {
				time.Sleep(100 * time.Millisecond)
			}
			if isForwarderd(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		os.Remove(pidFile)
	}
	os.Remove(filepath.Join(labRunDir, "forwarderd.log"))
	return lab.Remove(labID)
}

// isForwarderd checks that pid is still our forwarderd, not a recycled pid.
func isForwarderd(pid int) bool {
	name, err := procs.Proc.Name(pid)
	return err == nil && name == "forwarderd"
}
