package install

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/internal/job"
)

// TestJob runs the install job with stand-ins for the install: its
// progress shows while it runs, a second start is refused, a refusal is
// reported as one that wrote nothing.
func TestJob(t *testing.T) {
	release := make(chan struct{})
	j := &Job{Run: func(ctx context.Context, o SelfOptions) (*Result, error) {
		o.Progress("writing", 10, 100)
		<-release
		return &Result{Image: "/dev/sdb", Target: o.Target, Written: 100}, nil
	}}
	if err := j.Start("/dev/sda", false, "ncpos@192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	wait := func(want string) job.State[Progress] {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			st := j.State()
			if st.State == want && (want != job.Running || st.Progress.Phase != "") {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %+v, want %s", st, want)
			}
		}
	}
	st := wait(job.Running)
	if st.Progress != (Progress{Target: "/dev/sda", Phase: "writing", Done: 10, Total: 100}) || st.By != "ncpos@192.0.2.1" {
		t.Errorf("running: %+v", st)
	}
	if err := j.Start("/dev/sdc", false, "x"); err == nil || !strings.Contains(err.Error(), "onto /dev/sda is already running") {
		t.Errorf("second start: %v", err)
	}
	close(release)
	if st := wait(job.Done); !strings.Contains(st.Result, "onto /dev/sda") {
		t.Errorf("done: %+v", st)
	}

	j.Run = func(ctx context.Context, o SelfOptions) (*Result, error) {
		return nil, &RefusedError{Target: o.Target, Reasons: []string{"it holds the running system"}}
	}
	if err := j.Start("/dev/sdb", false, "x"); err != nil {
		t.Fatal(err)
	}
	if st := wait(job.Failed); !strings.HasPrefix(st.Error, "refused, nothing written: ") {
		t.Errorf("refused: %+v", st)
	}
}
