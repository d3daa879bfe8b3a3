package web

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/web/api"
	"github.com/ncpos/ncpos/web/selftest"
)

// fakeSelfTest is a self-test run that waits until released, reporting
// progress on the way.
type fakeSelfTest struct {
	release chan error
	sizes   [][]int
}

func (f *fakeSelfTest) run(ctx context.Context, sizes []int, progress func(size, index, total int)) (string, error) {
	f.sizes = append(f.sizes, sizes)
	progress(128, 1, 3)
	select {
	case err := <-f.release:
		if err != nil {
			return "", err
		}
		return "passed: 3 sizes on seg1", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func TestSelfTestAPI(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	auth := map[string]string{"Content-Type": "application/json", "Authorization": goodAuth}
	noauth := map[string]string{"Content-Type": "application/json"}
	post := func(body string, h map[string]string) *httpResult {
		return f.do(newRequest("POST", "/api/v1/control/selftest", body, h))
	}
	job := func() api.SelfTestJob {
		t.Helper()
		r := f.do(newRequest("GET", "/api/v1/selftest/job", "", nil))
		var v struct{ Job api.SelfTestJob }
		if r.Code != 200 || json.Unmarshal([]byte(r.Body), &v) != nil {
			t.Fatalf("GET /api/v1/selftest/job: %d %s", r.Code, r.Body)
		}
		return v.Job
	}

	if r := post("", auth); r.Code != 503 {
		t.Fatalf("without a self-test: %d %s, want 503", r.Code, r.Body)
	}
	fake := &fakeSelfTest{release: make(chan error)}
	notCabled := errors.New("no [selftest] cabling: no segment has both ports cabled to test ports")
	jobs := &selftest.Jobs{Run: fake.run, Cabled: func() error { return notCabled }}
	f.srv.SelfTest = jobs
	if r := post("", auth); r.Code != 503 || !strings.Contains(r.Body, "no [selftest] cabling") {
		t.Fatalf("not cabled: %d %s, want 503 saying why", r.Code, r.Body)
	}
	if j := job(); j.State != "idle" {
		t.Fatalf("job before any run: %+v", j)
	}
	jobs.Cabled = nil

	for _, tc := range []struct {
		name, body string
		headers    map[string]string
		code       int
		contains   string
	}{
		{"needs the password", "", noauth, 401, ""},
		{"size too small", `{"sizes":[64,63]}`, auth, 400, "frame size 63"},
		{"size too large", `{"sizes":[9019]}`, auth, 400, "frame size 9019"},
		{"too many sizes", `{"sizes":[64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64]}`, auth, 400, "at most 16"},
		{"unknown field", `{"size":64}`, auth, 400, "bad JSON"},
		{"not JSON", `{"sizes":`, auth, 400, "bad JSON"},
		{"start", `{"sizes":[64,128,1518]}`, auth, 202, `"state": "running"`},
		{"while running", "", auth, 409, "already running"},
	} {
		r := post(tc.body, tc.headers)
		if r.Code != tc.code || !strings.Contains(r.Body, tc.contains) {
			t.Errorf("%s: %d %s, want %d containing %q", tc.name, r.Code, r.Body, tc.code, tc.contains)
		}
	}
	waitFor(t, func() bool { return job().Size == 128 })
	if j := job(); j.State != "running" || j.Done != 1 || j.Total != 3 || !slices.Equal(j.Sizes, []int{64, 128, 1518}) || !strings.HasPrefix(j.By, "ncpos@") {
		t.Errorf("running job: %+v", j)
	}
	fake.release <- nil
	jobs.Wait(context.Background())
	if j := job(); j.State != "done" || j.Done != 3 || j.Result != "passed: 3 sizes on seg1" || j.Finished == "" {
		t.Errorf("finished job: %+v", j)
	}

	// No body: the configured sizes (nil); a failed run says why.
	if r := post("", auth); r.Code != 202 {
		t.Fatalf("start without a body: %d %s", r.Code, r.Body)
	}
	fake.release <- errors.New("analyzer on eth3: no such device")
	jobs.Wait(context.Background())
	if j := job(); j.State != "failed" || j.Error != "analyzer on eth3: no such device" {
		t.Errorf("failed job: %+v", j)
	}
	if len(fake.sizes) != 2 || fake.sizes[1] != nil {
		t.Errorf("runs got sizes %v, want [64 128 1518] then nil", fake.sizes)
	}
	// A run of the configured sizes counts them as the run reported them.
	if r := post("", auth); r.Code != 202 {
		t.Fatalf("start without a body: %d %s", r.Code, r.Body)
	}
	fake.release <- nil
	jobs.Wait(context.Background())
	if j := job(); j.State != "done" || j.Done != 3 || j.Total != 3 || j.Sizes != nil {
		t.Errorf("done job of the configured sizes: %+v, want 3 of 3 sizes", j)
	}
	var found bool
	for _, e := range f.events.Recent(10) {
		found = found || strings.Contains(e.Message, "self-test (64,128,1518 bytes) started by ncpos@")
	}
	if !found {
		t.Errorf("no control event for the start: %+v", f.events.Recent(10))
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("timed out")
}
