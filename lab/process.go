package lab

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ncpos/ncpos/ipc"
)

// BuildDaemon compiles services/<name> into dir and returns the binary's
// path. It must run inside the ncpos module. With NCPOS_LAB_RACE=1 the
// binary is built with the race detector.
func BuildDaemon(dir, name string) (string, error) {
	out := filepath.Join(dir, name)
	args := []string{"build", "-o", out}
	if os.Getenv("NCPOS_LAB_RACE") == "1" {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "github.com/ncpos/ncpos/services/"+name)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("lab: building %s: %w\n%s", name, err, b)
	}
	return out, nil
}

// Process is an ncpos daemon running in the lab's forwarder namespace.
type Process struct {
	Name   string
	RunDir string // its NCPOS_RUN_DIR: socket and log
	Log    string
	cmd    *exec.Cmd
	done   chan error
}

// StartProcess runs bin with args in the forwarder namespace (through `ip
// netns exec`, which also gives it the namespace's /sys) with
// NCPOS_RUN_DIR=runDir, logging to runDir/<name>.log, and waits until
// ready succeeds, the process exits (the error carries its log) or timeout
// passes.
func (l *Lab) StartProcess(name, bin, runDir string, args []string, ready func() error, timeout time.Duration) (*Process, error) {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(runDir, name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command("ip", append([]string{"netns", "exec", l.FW.Name, bin}, args...)...)
	cmd.Env = append(os.Environ(), "NCPOS_RUN_DIR="+runDir)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, so that a Ctrl-C of `ncpos lab up` does not
	// reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("lab: starting %s: %w", name, err)
	}
	p := &Process{Name: name, RunDir: runDir, Log: logPath, cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	deadline := time.Now().Add(timeout)
	for {
		err := ready()
		if err == nil {
			return p, nil
		}
		select {
		case werr := <-p.done:
			b, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("lab: %s exited (%v):\n%s", name, werr, b)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Kill()
			return nil, fmt.Errorf("lab: %s did not answer in %v: %w", name, timeout, err)
		}
	}
}

// Pid is the process id (ip netns exec execs the daemon in place).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Kill sends SIGKILL, as a crash would, and waits for the process to go.
func (p *Process) Kill() error {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	err := <-p.done
	p.done <- err
	return nil
}

// Stop asks the daemon to exit (SIGTERM) and kills it after 10s. An exit
// other than the daemons' stopped status (ipc.ExitStopped) or 0 is
// returned as an error.
func (p *Process) Stop() error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case err := <-p.done:
		p.done <- err
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == ipc.ExitStopped {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lab: %s: %w", p.Name, err)
		}
		return nil
	case <-time.After(10 * time.Second):
		return p.Kill()
	}
}
