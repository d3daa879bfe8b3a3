package vm

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/ncpos/ncpos/web/api"
)

// controlStatus is the status code of a control request (the install
// listing) made with password.
func controlStatus(t *testing.T, v *VM, password string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", v.StatusURL()+"api/v1/install", nil)
	req.SetBasicAuth("ncpos", password)
	resp, err := v.Client(time.Minute).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// controlRequest sends an authenticated statusd API request.
func controlRequest(t *testing.T, v *VM, method, path string, body any) *http.Response {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, v.StatusURL()+path, rd)
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("ncpos", testPassword)
	resp, err := v.Client(5 * time.Minute).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

var sigRe = regexp.MustCompile(`root=PARTUUID=([0-9a-f]{8})-`)

// TestInstallToInternalDisk boots the image as if from a USB stick with an
// empty internal disk beside it, installs through the API, then boots the
// internal disk alone.
func TestInstallToInternalDisk(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	img := testImage(t, "default", nil)
	internal := filepath.Join(t.TempDir(), "internal-cf.img")
	if err := os.WriteFile(internal, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(internal, 512e6); err != nil {
		t.Fatal(err)
	}
	v, _ := boot(t, img, false, func(o *Options) { o.ExtraDisks = []string{internal} })
	before := system(t, v)

	var info struct {
		Source string            `json:"source"`
		Disks  []api.InstallDisk `json:"disks"`
		Job    api.InstallJob    `json:"job"`
	}
	resp := controlRequest(t, v, "GET", "api/v1/install", nil)
	json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	target := ""
	for _, d := range info.Disks {
		if d.Eligible && d.SizeBytes == 512e6 {
			target = d.Path
		}
		if d.Path == info.Source && d.Eligible {
			t.Errorf("the disk the system runs from (%s) is offered as eligible", d.Path)
		}
	}
	if target == "" {
		t.Fatalf("no eligible internal disk among %+v (source %s)", info.Disks, info.Source)
	}
	// A wrong confirmation is refused before anything is written.
	resp = controlRequest(t, v, "POST", "api/v1/control/install", api.InstallRequest{Device: target, Confirm: info.Source})
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("install with a wrong confirmation: %s", resp.Status)
	}
	start := time.Now()
	resp = controlRequest(t, v, "POST", "api/v1/control/install", api.InstallRequest{Device: target, Confirm: target})
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("install: %s", resp.Status)
	}
	// Hashing 512 MB twice in software emulation takes 5 min alone, and
	// more with two other guests on the same two cores.
	for deadline := time.Now().Add(v.Within(40 * time.Minute)); ; time.Sleep(2 * time.Second) {
		resp := controlRequest(t, v, "GET", "api/v1/install", nil)
		json.NewDecoder(resp.Body).Decode(&info)
		resp.Body.Close()
		if info.Job.State == "done" {
			break
		}
		if info.Job.State == "failed" || time.Now().After(deadline) {
			t.Fatalf("install job: %+v", info.Job)
		}
	}
	t.Logf("install to internal disk %s took %v: %s", target, time.Since(start).Round(100*time.Millisecond), info.Job.Result)
	stickKey, err := v.Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`control password of the installed disk \(user ncpos\): (\S+)`).FindStringSubmatch(info.Job.Result)
	if m == nil {
		t.Fatalf("the install result gives no control password for the new disk: %s", info.Job.Result)
	}
	newPassword := m[1]
	v.Kill()

	// The internal disk boots on its own, as a box of its own.
	v2, _ := boot(t, internal, false)
	v2.Password = newPassword // reading needs it too
	after := system(t, v2)
	if after.BuildID != before.BuildID {
		t.Errorf("internal disk runs build %s, want %s", after.BuildID, before.BuildID)
	}
	if after.MachineID == "" || after.MachineID == before.MachineID {
		t.Errorf("machine id %q on the internal disk, stick had %q: want a new one", after.MachineID, before.MachineID)
	}
	b, a := sigRe.FindStringSubmatch(before.Cmdline), sigRe.FindStringSubmatch(after.Cmdline)
	if b == nil || a == nil || a[1] == b[1] {
		t.Errorf("disk signature %v -> %v, want a new one", b, a)
	}
	// Its own TLS key and its own control password; the stick's opens
	// nothing.
	if key, err := v2.Fingerprint(); err != nil || key == stickKey {
		t.Errorf("TLS key on the internal disk %s (%v), the stick's %s: want a new one", key, err, stickKey)
	}
	if code := controlStatus(t, v2, newPassword); code != 200 {
		t.Errorf("control on the internal disk with the new password = %d, want 200", code)
	}
	if code := controlStatus(t, v2, testPassword); code != 401 {
		t.Errorf("control on the internal disk with the stick's password = %d, want 401", code)
	}
}
