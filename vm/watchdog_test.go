package vm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/image"
	"github.com/ncpos/ncpos/web/api"
)

// wdConfig makes watchdog tests quick: a 10 s hardware timeout, checks
// every 2 s, and a grace period long enough for a software-emulated boot.
var wdConfig = []byte(`platform = "qemu"
services = ["forwarderd", "bypassd", "watchdogd", "statusd"]

[watchdog]
timeout = "10s"
interval = "2s"
boot_grace = "60s"

[[segment]]
name = "seg1"
ports = ["LAN1", "LAN2"]
`)

const wdTimeout = 10 * time.Second
const wdInterval = 2 * time.Second

// hungDaemon is the daemon the hang test freezes: the datapath.
const hungDaemon = "forwarderd"

func wdImage(t *testing.T) string {
	return testImage(t, "wdtest", wdConfig, image.Program{Pkg: "github.com/ncpos/ncpos/vm/hangctl", Path: "/user/test/hangctl"})
}

func hangctlURL(v *VM) string {
	for host := range v.Options.Forwards {
		return fmt.Sprintf("http://127.0.0.1:%d/", host)
	}
	return ""
}

// waitPastGrace waits until the boot grace period is over, so the checks
// gate the pets.
func waitPastGrace(t *testing.T, v *VM) *api.System {
	t.Helper()
	for deadline := time.Now().Add(v.Within(3 * time.Minute)); ; {
		s := system(t, v)
		if p := s.Watchdog.Petter; p != nil && !p.InGrace && p.Petting {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("still in grace or not petting after 3 minutes: %+v", s.Watchdog)
		}
		time.Sleep(2 * time.Second)
	}
}

// waitReboot waits until the appliance answers again with a smaller uptime
// than before, and returns the new snapshot and when the new boot started.
func waitReboot(t *testing.T, v *VM, since time.Time, within time.Duration) (*api.System, time.Time) {
	t.Helper()
	// A fresh connection each time: the box goes away under our feet.
	c := v.Client(2 * time.Second)
	for deadline := time.Now().Add(v.Within(within)); time.Now().Before(deadline); time.Sleep(time.Second) {
		resp, err := readAPI(c, v.StatusURL()+"api/v1/system")
		if err != nil {
			continue
		}
		var s api.System
		err = json.NewDecoder(resp.Body).Decode(&s)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			continue
		}
		booted := time.Now().Add(-time.Duration(s.UptimeSeconds * float64(time.Second)))
		if booted.After(since) {
			return &s, booted
		}
	}
	t.Fatalf("no reboot within %v", within)
	return nil, time.Time{}
}

func TestWatchdogHealthyNotReset(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	v, _ := boot(t, wdImage(t), false)
	before := waitPastGrace(t, v)
	time.Sleep(3 * wdTimeout)
	after := system(t, v)
	if after.UptimeSeconds < before.UptimeSeconds+(3*wdTimeout).Seconds()-1 {
		t.Fatalf("uptime went from %.0f s to %.0f s over %v: the healthy appliance was reset", before.UptimeSeconds, after.UptimeSeconds, 3*wdTimeout)
	}
	if p := after.Watchdog.Petter; p == nil || !p.Petting || p.Pings <= before.Watchdog.Petter.Pings {
		t.Fatalf("watchdogd = %+v, want petting", p)
	}
	t.Logf("healthy for %v past grace: no reset, %d pets, last reset %q", 3*wdTimeout, after.Watchdog.Petter.Pings, after.Watchdog.Petter.LastReset.Text)
}

func TestWatchdogResetsHungAppliance(t *testing.T) {
	requireQEMU(t)
	needWatchdogReset(t)
	t.Parallel()
	v, _ := boot(t, wdImage(t), false)
	waitPastGrace(t, v)
	resetAfter(t, v, "stop?daemon="+hungDaemon, hungDaemon+" liveness failing since")
}

// TestWatchdogResetsFrozenStatusd: statusd frozen, so nobody can reach the
// box from afar: a reset mends it.
func TestWatchdogResetsFrozenStatusd(t *testing.T) {
	requireQEMU(t)
	needWatchdogReset(t)
	t.Parallel()
	v, _ := boot(t, wdImage(t), false)
	waitPastGrace(t, v)
	resetAfter(t, v, "stop?daemon=statusd", "statusd liveness failing since")
}

// resetAfter asks hangctl for what (a hang) and wants the watchdog
// to reset the box within timeout + interval, and the next boot to name the
// failing check (want in its last reset).
func resetAfter(t *testing.T, v *VM, what, want string) {
	t.Helper()
	hung := time.Now()
	resp, err := http.Post(hangctlURL(v)+what, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("hangctl %s: %s %s", what, resp.Status, body)
	}
	t.Logf("hangctl %s: %s", what, strings.TrimSpace(string(body)))
	// QEMU reports the moment its emulated watchdog fires (QMP WATCHDOG
	// event): exact, whatever the load on this host.
	var took time.Duration
	for deadline := hung.Add(v.Within(2 * time.Minute)); took == 0; time.Sleep(100 * time.Millisecond) {
		for _, e := range v.Events() {
			if e.Name == "WATCHDOG" && e.At.After(hung) {
				took = e.At.Sub(hung)
				t.Logf("QEMU: watchdog fired, action %v", e.Data["action"])
				break
			}
		}
		if took == 0 && time.Now().After(deadline) {
			t.Fatalf("the watchdog did not fire within two minutes of %s", what)
		}
	}
	t.Logf("%s to watchdog reset: %v (timeout %v, interval %v)", what, took.Round(100*time.Millisecond), wdTimeout, wdInterval)
	// A second for the guest to notice, as long as it runs slowly.
	if slack := v.Within(time.Second); took > wdTimeout+wdInterval+slack {
		t.Errorf("reset %v after %s, want within timeout + interval (%v) + %v", took, what, wdTimeout+wdInterval, slack)
	}
	s, _ := waitReboot(t, v, hung, 5*time.Minute)
	// The new boot reports a watchdog reset naming the failing check.
	for deadline := time.Now().Add(v.Within(time.Minute)); s.Watchdog.Petter == nil && time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		s = system(t, v)
	}
	if s.Watchdog.Petter == nil {
		t.Fatalf("watchdogd not reporting after the reset: %s", s.Watchdog.Error)
	}
	lr := s.Watchdog.Petter.LastReset
	t.Logf("last reset: %s (boot status %#x)", lr.Text, lr.BootStatus)
	if lr.Kind != "watchdog" || !strings.Contains(lr.Text, want) {
		t.Errorf("last reset = %q, want a watchdog reset naming %q", lr.Text, want)
	}
	if lr.BootStatus&unix.WDIOF_CARDRESET == 0 {
		t.Errorf("boot status %#x lacks WDIOF_CARDRESET: the driver did not see its own reset", lr.BootStatus)
	}
}

// plannedConfig is wdConfig with a minute of hardware timeout: a reboot
// whose stop takes longer than the timeout is, by design, a hung stop
// (the watchdog's), and on a loaded CI host stopping every daemon, /perm
// and the kernel once took more than ten seconds.
var plannedConfig = bytes.Replace(wdConfig, []byte(`timeout = "10s"`), []byte(`timeout = "60s"`), 1)

func TestWatchdogPlannedReboot(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	v, _ := boot(t, testImage(t, "wdplanned", plannedConfig, image.Program{Pkg: "github.com/ncpos/ncpos/vm/hangctl", Path: "/user/test/hangctl"}), false)
	waitPastGrace(t, v)

	asked := time.Now()
	resp := controlRequest(t, v, "POST", "api/v1/control/reboot", api.RebootRequest{Reason: "planned reboot test"})
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("statusd reboot: %s", resp.Status)
	}
	s, _ := waitReboot(t, v, asked, 5*time.Minute)
	for deadline := time.Now().Add(v.Within(time.Minute)); s.Watchdog.Petter == nil && time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		s = system(t, v)
	}
	if s.Watchdog.Petter == nil {
		t.Fatalf("watchdogd not reporting after the reboot: %s", s.Watchdog.Error)
	}
	if lr := s.Watchdog.Petter.LastReset; lr.Kind != "planned reboot" {
		t.Errorf("last reset after an API reboot = %q, want planned reboot", lr.Text)
	} else {
		t.Logf("last reset: %s", lr.Text)
	}
}
