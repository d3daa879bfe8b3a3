package lab_test

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/lab"
)

// mounted lists the mounts whose path contains s.
func mounted(t *testing.T, s string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.Contains(f[4], s) {
			out = append(out, f[4])
		}
	}
	return out
}

// TestIPNetnsCoexists: an `ip netns add` while a lab is up must leave the
// lab's namespaces usable, and the lab must then remove them for good (no
// mount of them left), as iproute2 removes its own.
func TestIPNetnsCoexists(t *testing.T) {
	requireLab(t)
	ip, err := exec.LookPath("ip")
	if err != nil {
		t.Fatal("ip (iproute2) not found")
	}
	id := strconv.FormatInt(int64(rand.IntN(36*36*36)), 36)
	l, err := lab.New(lab.Config{ID: id, Segments: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	other := l.Name("ipr")
	if out, err := exec.Command(ip, "netns", "add", other).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v\n%s", other, err, out)
	}
	defer exec.Command(ip, "netns", "del", other).Run()
	if _, err := l.FW.Link(l.Segments[0].Ports[0]); err != nil {
		t.Fatalf("the lab's namespace after ip netns add: %v", err)
	}
	out, err := exec.Command(ip, "netns", "list").CombinedOutput()
	if err != nil || !strings.Contains(string(out), l.FW.Name) {
		t.Errorf("ip netns list does not show %s: %v\n%s", l.FW.Name, err, out)
	}
	if out, err := exec.Command(ip, "netns", "exec", l.Segments[0].Hosts[0].Name, "true").CombinedOutput(); err != nil {
		t.Errorf("ip netns exec into the lab: %v\n%s", err, out)
	}
	if out, err := exec.Command(ip, "netns", "del", other).CombinedOutput(); err != nil {
		t.Fatalf("ip netns del %s: %v\n%s", other, err, out)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("closing the lab after ip netns: %v", err)
	}
	if m := mounted(t, l.Name("")); len(m) > 0 {
		t.Errorf("namespaces still mounted after the lab closed: %v", m)
	}
	if left, _ := filepath.Glob(filepath.Join("/run/netns", l.Name("*"))); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestStaleLabRemoved: a lab whose owner is gone (an interrupted run) is
// removed by the next lab of its ID; one whose owner runs is refused.
func TestStaleLabRemoved(t *testing.T) {
	requireLab(t)
	id := strconv.FormatInt(int64(rand.IntN(36*36*36)), 36)
	first, err := lab.New(lab.Config{ID: id, Segments: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if _, err := lab.New(lab.Config{ID: id, Segments: 1}); err == nil || !strings.Contains(err.Error(), "in use by pid") {
		t.Fatalf("second lab %s while the first's owner runs: err %v, want in use", id, err)
	}
	// The owner dies without closing: give the lab a pid that has exited.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("/run/ncpos-lab", id), []byte(strconv.Itoa(dead.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	second, err := lab.New(lab.Config{ID: id, Segments: 1})
	if err != nil {
		t.Fatalf("lab %s left by a dead owner: %v", id, err)
	}
	if _, err := second.FW.Link(second.Segments[0].Ports[0]); err != nil {
		t.Errorf("the new lab: %v", err)
	}
	if err := second.Close(); err != nil {
		t.Errorf("closing the new lab: %v", err)
	}
	if m := mounted(t, second.Name("")); len(m) > 0 {
		t.Errorf("still mounted: %v", m)
	}
}
