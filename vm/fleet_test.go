package vm

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/internal/syslogtest"
)

// fleetConfig is a box of the fleet test: the same appliance with its
// daemons' lines going to a remote syslog target, or kept on the box
// (serial console and RAM) when syslog is "".
func fleetConfig(hostname, syslog string) []byte {
	cfg := fmt.Sprintf(`platform = "qemu"
hostname = %q
services = ["bypassd", "watchdogd", "statusd"]

[watchdog]
boot_grace = "3600s"

# Prometheus and the headless browser of these tests read as anyone on
# the management network may when reading is open; the accounts test
# reads with a viewer.
[status]
auth_read = false

[[segment]]
name = "seg1"
ports = ["LAN1", "LAN2"]
bypass = "pair1"
`, hostname)
	if syslog != "" {
		cfg += fmt.Sprintf("\n[syslog]\ntarget = %q\n", syslog)
	}
	return []byte(cfg)
}

// writeWindow is how long the fleet test compares boot-disk writes:
// $NCPOS_WRITE_WINDOW (a Go duration), or 10 minutes.
func writeWindow(t *testing.T) time.Duration {
	s := os.Getenv("NCPOS_WRITE_WINDOW")
	if s == "" {
		return 10 * time.Minute
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 5*time.Minute {
		t.Fatalf("NCPOS_WRITE_WINDOW=%q: want a duration of at least 5m (a shorter window cannot tell logging to flash from the journal's noise)", s)
	}
	return d
}

// TestFleet boots two appliances, the same but for remote logging, puts
// both into a host inventory and has a real Prometheus scrape both
// through the inventory's service discovery file. Then, for the write
// window, both boxes get the same work (a data cable pulled and plugged,
// overrides through the API, Prometheus' scrapes) while QEMU counts what
// each guest writes to its boot disk: the box that ships its lines to
// syslog over TCP must write no more than the one that does not.
//
// Its two guests hold two guest slots while they boot; from then on,
// where they settle and then sit idle but for a cable change every 15 s,
// other tests' guests run beside them.
func TestFleet(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	// First in line for the slots (guestOrder): the longer its window
	// overlaps the other tests, the shorter the run.
	needGuests(t, 2)
	window := writeWindow(t)
	collector := syslogtest.Listen(t, "tcp")
	logging := testImage(t, "fleet-logging", fleetConfig("ncpos-fleet-a", fmt.Sprintf("tcp://10.0.2.2:%d", collector.Addr.Port)))
	quiet := testImage(t, "fleet-quiet", fleetConfig("ncpos-fleet-b", ""))
	a, serialA := boot(t, logging, false)
	b, serialB := boot(t, quiet, false)

	prom := startPrometheus(t, inventoryOf(t, a, b), "")
	builds := map[string]string{"ncpos-fleet-a": system(t, a).BuildID, "ncpos-fleet-b": system(t, b).BuildID}
	for deadline := time.Now().Add(Within(2*time.Minute, a, b)); ; time.Sleep(time.Second) {
		up := prom.query(t, `up{job="ncpos"} == 1`)
		info := prom.query(t, `ncpos_build_info`)
		got := map[string]string{}
		for _, s := range info {
			got[s.Labels["box"]] = s.Labels["build_id"]
		}
		if len(up) == 2 && got["ncpos-fleet-a"] == builds["ncpos-fleet-a"] && got["ncpos-fleet-b"] == builds["ncpos-fleet-b"] {
			t.Logf("Prometheus scrapes both boxes from the inventory's service discovery: %v", got)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus: up %+v, builds %v, want both boxes %v", up, got, builds)
		}
	}

	// The boxes are left to themselves from now on but for a cable change
	// every 15 s: other tests' guests may run meanwhile. The window opens
	// once both boxes have settled after boot.
	idleGuests(t)
	time.Sleep(30 * time.Second)
	type count struct{ bytes, ops uint64 }
	read := func(v *VM) count {
		by, ops, err := v.DiskWrites()
		if err != nil {
			t.Fatal(err)
		}
		return count{by, ops}
	}
	startA, startB := read(a), read(b)
	linesBefore := len(collector.All())
	daemonLines := regexp.MustCompile(`ncpos-fleet-a (bypassd|statusd) \d+ log - `)
	daemonBefore := collector.Count(daemonLines)
	start := time.Now()
	rounds := 0
	for time.Since(start) < window {
		// A cable pulled or plugged, and every other round an override
		// set or ended: link events, control events and the daemons'
		// lines about them, and bypassd's journal on /perm.
		state := `{"segment":"seg1","state":"normal","reason":"fleet: hold"}`
		if rounds%4 >= 2 {
			state = `{"segment":"seg1","state":"auto"}`
		}
		for _, v := range []*VM{a, b} {
			if err := v.SetLink("lan1", rounds%2 == 1); err != nil {
				t.Fatal(err)
			}
			if rounds%2 == 0 {
				override(t, v, state)
			}
		}
		rounds++
		time.Sleep(15 * time.Second)
	}
	for _, v := range []*VM{a, b} {
		if err := v.SetLink("lan1", true); err != nil {
			t.Fatal(err)
		}
	}
	endA, endB := read(a), read(b)
	shipped := len(collector.All()) - linesBefore
	wA, wB := endA.bytes-startA.bytes, endB.bytes-startB.bytes
	t.Logf("boot-disk writes over %v (%d rounds of cable changes and overrides): with syslog %d bytes in %d writes, without %d bytes in %d writes; %d messages (%d daemon lines) reached the syslog collector over TCP",
		window, rounds, wA, endA.ops-startA.ops, wB, endB.ops-startB.ops, shipped, collector.Count(daemonLines)-daemonBefore)

	// Logging was on: daemon lines reached the collector during the
	// window, and the serial consoles have them.
	if n := collector.Count(daemonLines) - daemonBefore; n == 0 {
		t.Fatalf("%d messages during the window, none a daemon's line: logging was not on", shipped)
	}
	for _, serial := range []string{serialA, serialB} {
		if c, _ := os.ReadFile(serial); !strings.Contains(string(c), "statusd: ") {
			t.Errorf("%s has no statusd line", serial)
		}
	}
	// Both journaled the same overrides: the count sees writes.
	if wB == 0 {
		t.Fatal("the overrides bypassd journals on /perm did not show in the boot disk's writes: the count proves nothing")
	}
	// Daemon lines written to flash would cost at least a block each
	// round: rounds are 15 s apart and ext4 commits every 5 s, so each
	// round's lines would go in a commit of their own. The slack must
	// stay below that, or the comparison could not see it.
	slack := max(writeSlack, wB/8)
	if least := uint64(rounds) * 4096; slack >= least {
		t.Fatalf("slack %d bytes, but logging to flash would add at least %d over %d rounds: the window is too short to tell", slack, least, rounds)
	}
	if wA > wB+slack {
		t.Errorf("the box logging to syslog wrote %d bytes to its boot disk, the one without %d (slack %d): logging must not write to flash", wA, wB, slack)
	}
}

// writeSlack (or an eighth, if more) is what two boxes doing the same
// work may differ by in what they write to /perm: ext4 commits its
// journal on a timer, so the same appends and renames can land in more or
// fewer commits, each with its own journal blocks. Measured over 10
// minutes: 15360 and 70656 bytes apart in two runs, of some 470000,
// before every write to /perm synced its file and directory; since, the
// syncs commit the journal at each write, and two boxes wrote 714752
// bytes each, to the byte (a quarter as slack was then more than 40
// rounds of logging to flash would add, and the test could tell nothing).
const writeSlack = 64 << 10

// override sets a bypass override, asking again when the connection
// breaks: the box may close the oldest of a client's waiting
// connections, and Prometheus' scrapes come from the same address.
func override(t *testing.T, v *VM, body string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		code, resp, err := tryControl(v, "/api/v1/control/bypass", "ncpos", testPassword, body)
		if err == nil && code == 200 {
			return
		}
		if err == nil || attempt == 3 {
			t.Fatalf("override = %d %s %v", code, resp, err)
		}
		t.Logf("override, attempt %d: %v; again", attempt, err)
		time.Sleep(time.Second)
	}
}
