package lab_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/internal/testenv"
	"github.com/ncpos/ncpos/lab"
)

// TestLLDPNeighbours runs Debian's lldpd as the neighbour on each side
// of a segment: each port shows its own side's system name within an
// LLDP interval, each lldpd still hears the other through the segment
// (the box forwards LLDP and sends none of its own), and a neighbour
// goes from its port once its lldpd stops.
func TestLLDPNeighbours(t *testing.T) {
	bin := testenv.LookPath(t, testenv.Tools, "lldpd", "lldpd")
	cli := testenv.LookPath(t, testenv.Tools, "lldpcli", "lldpd")
	l := newLab(t, 1, 1)
	d := startForwarderd(t, l)
	seg := l.Segments[0]
	var stops [2]func(syscall.Signal)
	socks := [2]string{}
	for side, name := range []string{"neighbour-a", "neighbour-b"} {
		stops[side], socks[side] = startLLDPD(t, bin, seg.Hosts[side], seg.HostIfs[side], name)
	}
	start := time.Now()
	for side, name := range []string{"neighbour-a", "neighbour-b"} {
		waitPort(t, d, seg.Ports[side], name+" as its neighbour", func(p forwarderapi.PortStatus) bool {
			return len(p.Neighbors) == 1 && p.Neighbors[0].SystemName == name && p.Neighbors[0].TTL > 0 && p.LLDPRejected == 0
		})
	}
	t.Logf("both ports show their neighbour %v after lldpd started", time.Since(start).Round(time.Millisecond))

	// Each lldpd hears the other across the segment, and nothing else:
	// the box is not a hop.
	for side, want := range []string{"neighbour-b", "neighbour-a"} {
		var out []byte
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			var err error
			out, err = exec.Command("ip", "netns", "exec", seg.Hosts[side].Name, cli, "-u", socks[side], "show", "neighbors", "summary").CombinedOutput()
			if err == nil && strings.Contains(string(out), want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("lldpd on side %d does not hear %s through the segment:\n%s", side, want, out)
			}
		}
		if n := strings.Count(string(out), "SysName:"); n != 1 {
			t.Errorf("lldpd on side %d hears %d neighbours, want the other side's alone:\n%s", side, n, out)
		}
	}

	// Stopped, neighbour-a leaves its port at once (lldpd says so as it
	// stops); neighbour-b stays.
	stops[0](syscall.SIGTERM)
	stopped := time.Now()
	waitPort(t, d, seg.Ports[0], "no neighbour once lldpd stopped", func(p forwarderapi.PortStatus) bool { return len(p.Neighbors) == 0 })
	t.Logf("neighbour-a gone from its port %v after its lldpd stopped", time.Since(stopped).Round(time.Millisecond))
	var ttl time.Duration
	waitPort(t, d, seg.Ports[1], "neighbour-b still", func(p forwarderapi.PortStatus) bool {
		if len(p.Neighbors) == 1 && p.Neighbors[0].SystemName == "neighbour-b" {
			ttl = time.Duration(p.Neighbors[0].TTL) * time.Second
			return true
		}
		return false
	})
	// Killed, neighbour-b says nothing: it ages out when its TTL runs out.
	stops[1](syscall.SIGKILL)
	killed := time.Now()
	time.Sleep(ttl / 2)
	waitPort(t, d, seg.Ports[1], "neighbour-b until half its TTL", func(p forwarderapi.PortStatus) bool { return len(p.Neighbors) == 1 })
	waitPort(t, d, seg.Ports[1], "no neighbour once its TTL ran out", func(p forwarderapi.PortStatus) bool { return len(p.Neighbors) == 0 })
	if took := time.Since(killed); took > ttl+2*time.Second {
		t.Errorf("neighbour-b aged out %v after its lldpd was killed, its TTL is %v", took, ttl)
	}
	t.Logf("neighbour-b aged out %v after its lldpd was killed (TTL %v)", time.Since(killed).Round(time.Millisecond), ttl)
}

// startLLDPD runs lldpd in ns on ifname only, calling itself sysName and
// sending every second (its TTL is then 4 s). It returns how to stop it
// with a signal (SIGTERM when the test ends) and its control socket.
func startLLDPD(t *testing.T, bin string, ns *lab.Netns, ifname, sysName string) (stop func(syscall.Signal), sock string) {
	t.Helper()
	// Not t.TempDir: lldpd's own lldpcli, which reads the configuration
	// and talks on the socket, runs as lldpd's unprivileged user.
	dir, err := os.MkdirTemp("", "ncpt-lldpd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "lldpd.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("configure system hostname %s\nconfigure lldp tx-interval 1\n", sysName)), 0o644); err != nil {
		t.Fatal(err)
	}
	sock = filepath.Join(dir, "lldpd.socket")
	// -d: in the foreground; -O: this configuration
	// alone; -u: its own control socket; -I: this interface only.
	cmd := exec.Command("ip", "netns", "exec", ns.Name, bin, "-d", "-O", conf, "-u", sock, "-I", ifname)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	stopped := false
	stop = func(sig syscall.Signal) {
		if stopped {
			return
		}
		stopped = true
		syscall.Kill(-cmd.Process.Pid, sig)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	t.Cleanup(func() {
		stop(syscall.SIGTERM)
		if t.Failed() {
			t.Logf("lldpd %s:\n%s", sysName, out)
		}
	})
	return stop, sock
}
