package job

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRunner(t *testing.T) {
	var r Runner[int]
	if st := r.State(); st.State != Idle {
		t.Fatalf("before any run: %+v", st)
	}
	release := make(chan struct{})
	reported := make(chan struct{})
	err := r.Start(context.Background(), "alice", 0, func(ctx context.Context, progress func(int)) (string, error) {
		progress(7)
		close(reported)
		<-release
		return "all good", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	<-reported
	if st := r.State(); st.State != Running || st.Progress != 7 || st.By != "alice" || st.Started.IsZero() {
		t.Errorf("while running: %+v", st)
	}
	if err := r.Start(context.Background(), "bob", 0, nil); !errors.Is(err, ErrRunning) {
		t.Errorf("second start while running: %v", err)
	}
	close(release)
	if err := r.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := r.State(); st.State != Done || st.Result != "all good" || st.Finished.Before(st.Started) {
		t.Errorf("after: %+v", st)
	}

	r.Start(context.Background(), "carol", 0, func(context.Context, func(int)) (string, error) {
		return "half", errors.New("disk vanished")
	})
	r.Wait(context.Background())
	if st := r.State(); st.State != Failed || st.Error != "disk vanished" || st.Result != "half" || st.By != "carol" {
		t.Errorf("failed run: %+v", st)
	}

	r.Start(context.Background(), "dave", 0, func(context.Context, func(int)) (string, error) { panic("boom") })
	r.Wait(context.Background())
	if st := r.State(); st.State != Failed || !strings.Contains(st.Error, "boom") {
		t.Errorf("panicking run: %+v", st)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	block := make(chan struct{})
	defer close(block)
	r.Start(context.Background(), "erin", 0, func(context.Context, func(int)) (string, error) { <-block; return "", nil })
	if err := r.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait past its context: %v", err)
	}
}
