package lab_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ncpos/ncpos/internal/testenv"
	"github.com/ncpos/ncpos/lab"
)

// forwarderdBin is built once by TestMain when the tests can run.
var forwarderdBin string

func TestMain(m *testing.M) {
	code := func() int {
		if os.Geteuid() == 0 {
			dir, err := os.MkdirTemp("", "ncpos-lab-bin")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			defer os.RemoveAll(dir)
			if forwarderdBin, err = lab.BuildForwarderd(dir); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		return m.Run()
	}()
	os.Exit(code)
}

// requireLab skips unless root; with NCPOS_REQUIRE_LAB=1 (CI) it fails
// instead, so a lab that cannot run is never mistaken for a passing one.
func requireLab(t *testing.T) {
	t.Helper()
	testenv.NeedRoot(t, testenv.Lab, "the lab")
}

// newLab builds a lab whose ID is unique to this process and test, and
// removes it (namespaces, veths, anything attached) when the test ends,
// failed or not.
func newLab(t *testing.T, segments, queues int) *lab.Lab {
	t.Helper()
	requireLab(t)
	// Unique among concurrent test processes in practice: 36^4 ids, and
	// lab.New refuses one in use rather than take it over.
	id := strconv.FormatInt(int64(rand.IntN(36*36*36*36)), 36)
	l, err := lab.New(lab.Config{ID: id, Segments: segments, Queues: queues})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("cleaning up the lab: %v", err)
		}
	})
	return l
}

// attachSinks attaches the lab's sinks (capturing frames when capture is
// set) and detaches them when the test ends.
func attachSinks(t *testing.T, l *lab.Lab, capture bool) *lab.Sinks {
	t.Helper()
	sinks, err := l.AttachSinks(capture)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sinks.Close() })
	return sinks
}

// sender opens a raw sender on side 0 of segment 0, closed when the test
// ends.
func sender(t *testing.T, l *lab.Lab) *lab.Sender {
	t.Helper()
	snd, err := l.Sender(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { snd.Close() })
	return snd
}

// startForwarderd runs forwarderd in the lab and stops it at the end of
// the test; its log is printed if the test failed.
func startForwarderd(t *testing.T, l *lab.Lab, args ...string) *lab.Daemon {
	t.Helper()
	d, err := l.StartForwarderd(forwarderdBin, t.TempDir(), append([]string{"-interval", "200ms"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopDaemon(t, d) })
	if err := d.WaitHealthy(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	return d
}

// stopDaemon kills forwarderd, wants no race or panic in its log and
// prints the log if the test failed.
func stopDaemon(t *testing.T, d *lab.Daemon) {
	d.Kill()
	b, _ := os.ReadFile(d.Log)
	if bytes.Contains(b, []byte("DATA RACE")) || bytes.Contains(b, []byte("panic:")) {
		t.Error("forwarderd raced or panicked")
	}
	if t.Failed() {
		t.Logf("forwarderd log:\n%s", b)
	}
}
