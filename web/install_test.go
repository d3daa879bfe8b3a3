package web

import (
	"errors"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/install"
	"github.com/ncpos/ncpos/internal/job"
	"github.com/ncpos/ncpos/web/api"
)

type fakeInstaller struct {
	started []string
	busy    bool
}

func (f *fakeInstaller) Disks() ([]api.InstallDisk, string, error) {
	return []api.InstallDisk{
		{Path: "/dev/sda", Model: "CF 512MB", SizeBytes: 512e6, Transport: "ata", Eligible: true},
		{Path: "/dev/sdb", Model: "USB stick", SizeBytes: 8e9, Transport: "usb", Why: "it holds the running system"},
	}, "/dev/sdb", nil
}

func (f *fakeInstaller) Start(target string, wipe bool, by string) error {
	if f.busy {
		return errors.New("an install onto /dev/sda is already running")
	}
	f.started = append(f.started, target)
	return nil
}

func (f *fakeInstaller) Job() job.State[install.Progress] {
	return job.State[install.Progress]{State: job.Running, Progress: install.Progress{Target: "/dev/sda"}}
}

func TestInstallAPI(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	inst := &fakeInstaller{}
	auth := map[string]string{"Content-Type": "application/json", "Authorization": goodAuth}
	noauth := map[string]string{"Content-Type": "application/json"}

	if r := f.do(newRequest("GET", "/api/v1/install", "", auth)); r.Code != 503 {
		t.Fatalf("without an installer: %d %s, want 503", r.Code, r.Body)
	}
	f.srv.Installer = inst
	for _, tc := range []struct {
		name, method, path, body string
		headers                  map[string]string
		code                     int
		contains                 string
	}{
		{"list needs the password", "GET", "/api/v1/install", "", noauth, 401, ""},
		{"list", "GET", "/api/v1/install", "", auth, 200, `"source": "/dev/sdb"`},
		{"start needs the password", "POST", "/api/v1/control/install", `{"device":"/dev/sda","confirm":"/dev/sda"}`, noauth, 401, ""},
		{"not under /dev", "POST", "/api/v1/control/install", `{"device":"/etc/passwd","confirm":"/etc/passwd"}`, auth, 400, "want a disk under /dev"},
		{"confirm differs", "POST", "/api/v1/control/install", `{"device":"/dev/sda","confirm":"/dev/sdb"}`, auth, 400, "confirm must repeat"},
		{"bad json", "POST", "/api/v1/control/install", `{"device":`, auth, 400, ""},
		{"start", "POST", "/api/v1/control/install", `{"device":"/dev/sda","confirm":"/dev/sda"}`, auth, 202, `"state": "running"`},
	} {
		r := f.do(newRequest(tc.method, tc.path, tc.body, tc.headers))
		if r.Code != tc.code || !strings.Contains(r.Body, tc.contains) {
			t.Errorf("%s: %d %s, want %d containing %q", tc.name, r.Code, r.Body, tc.code, tc.contains)
		}
	}
	if len(inst.started) != 1 || inst.started[0] != "/dev/sda" {
		t.Fatalf("installs started: %v, want exactly /dev/sda", inst.started)
	}
	inst.busy = true
	if r := f.do(newRequest("POST", "/api/v1/control/install", `{"device":"/dev/sda","confirm":"/dev/sda"}`, auth)); r.Code != 409 {
		t.Fatalf("second install while one runs: %d, want 409", r.Code)
	}
}
