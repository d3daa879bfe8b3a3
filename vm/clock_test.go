package vm

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/config"
	evlog "github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/internal/chronytest"
	"github.com/ncpos/ncpos/internal/syslogtest"
	"github.com/ncpos/ncpos/web/api"
)

// TestClockFromNTP boots a box whose board clock says 2006 (a dead
// battery) and gives it Debian's chrony on the host as its NTP server
// through a configuration change that waits for its confirmation: the
// box steps its clock to the host's time, says so on the API and in an
// event, and the pending change's deadline is the same moment after the
// step as before; a TLS syslog collector takes the box's lines only once
// its clock is right. Then, idle, it writes at most 1 MB an hour to its card
// while it keeps its time and announces itself.
func TestClockFromNTP(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	ntpd := chronytest.Start(t)
	// A TLS syslog collector whose certificate is valid from an hour ago:
	// not yet, on the board's clock.
	collector := syslogtest.Listen(t, "tls", "10.0.2.2")
	cfg := strings.Replace(string(config.DefaultTOML()), "\ntarget = \"\"\n", fmt.Sprintf("\ntarget = \"tls://10.0.2.2:%d\"\n", collector.Addr.Port), 1)
	cfg = strings.Replace(cfg, "\nca = \"\"\n", "\nca = \"\"\"\n"+string(collector.CA)+"\"\"\"\n", 1)
	img := testImage(t, "clock", []byte(cfg))
	board := time.Date(2006, 1, 1, 0, 0, 0, 0, time.UTC)
	v, _ := boot(t, img, false, func(o *Options) { o.RTCBase = board })
	s := snapshot(t, v)
	if s.Time.After(board.Add(24 * time.Hour)) {
		t.Fatalf("the box's clock reads %v, want the board's 2006", s.Time)
	}
	if tm := s.System.Time; tm == nil || tm.Synced || tm.Error != "no NTP servers configured" {
		t.Fatalf("the clock before any server is given: %+v", tm)
	}
	if got := collector.All(); len(got) != 0 {
		t.Errorf("the TLS collector took %d lines from a box whose clock says 2006, first %q", len(got), got[0])
	}

	// The guest reaches the host's loopback at 10.0.2.2.
	c := configClient(v)
	ctx := context.Background()
	cur, err := c.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	server := fmt.Sprintf("10.0.2.2:%d", ntpd.Port)
	text := strings.Replace(cur.Text, "servers = []", fmt.Sprintf("servers = [%q]", server), 1)
	within := 600
	applied := time.Now()
	res, err := c.ApplyConfig(ctx, api.ConfigApply{Text: text, Replaces: cur.Version, ConfirmWithin: &within, Comment: "time servers"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version.State != api.VersionPending || res.Version.Deadline.After(board.Add(24*time.Hour)) {
		t.Fatalf("applied: %+v, want pending with a deadline on the board's clock", res.Version)
	}

	var tm *api.TimeSync
	for deadline := time.Now().Add(v.Within(time.Minute)); ; time.Sleep(500 * time.Millisecond) {
		s = snapshot(t, v)
		if tm = s.System.Time; tm != nil && tm.Synced {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the clock is not synced with %s a minute after the change: %+v", server, tm)
		}
	}
	took := time.Since(applied)
	host := time.Now()
	// The snapshot is at most a sampling interval old.
	if lag := host.Sub(s.Time); lag < -time.Second || lag > v.Within(2*time.Second)+time.Second {
		t.Errorf("after the sync the box's clock read %v when the host's read %v (%v behind)", s.Time, host, lag)
	}
	if tm.Server != server || tm.Stratum != 3 || tm.StepSeconds < host.Sub(board).Seconds()-3600 {
		t.Errorf("clock after the sync: %+v, want a step of about %v from %s at stratum 3", tm, host.Sub(board).Round(time.Hour), server)
	}
	t.Logf("synced %v after the change: stepped by %.1f s (%v), server %s stratum %d", took.Round(100*time.Millisecond),
		tm.StepSeconds, time.Duration(tm.StepSeconds*float64(time.Second)).Round(time.Hour), tm.Server, tm.Stratum)

	// The deadline did not move: about ten minutes after the apply on
	// the host's clock, which the box now keeps.
	h, err := c.ConfigHistory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ver := range h.Versions {
		if ver.Number != res.Version.Number {
			continue
		}
		want := applied.Add(time.Duration(within) * time.Second)
		if ver.State != api.VersionPending || ver.Deadline.Sub(want) > v.Within(5*time.Second) || want.Sub(ver.Deadline) > v.Within(5*time.Second) {
			t.Errorf("after the step, version %d is %s with its deadline at %v; want pending until about %v", ver.Number, ver.State, ver.Deadline, want)
		}
	}
	if _, err := c.ConfirmConfig(ctx, res.Version.Number); err != nil {
		t.Errorf("confirming the change after the step: %v", err)
	}

	var evs struct{ Events []evlog.Event }
	getAPI(t, v, "api/v1/events?limit=200", &evs)
	var said string
	for _, e := range evs.Events {
		if e.Kind == evlog.KindTime {
			said = e.Message
		}
	}
	if !strings.HasPrefix(said, "clock synced with "+server+" (stratum 3): stepped by ") {
		t.Errorf("the time event says %q, want the first sync and its step", said)
	}
	if m := metricsText(t, v); !strings.Contains(m, "\nncpos_time_synced 1\n") {
		t.Errorf("/metrics does not say the clock is synced")
	}
	// Now the collector's certificate is valid on the box's clock: the
	// sync's event reaches it.
	synced := regexp.MustCompile(`clock synced with `)
	for deadline := time.Now().Add(v.Within(time.Minute)); collector.Count(synced) == 0; time.Sleep(time.Second) {
		if time.Now().After(deadline) {
			t.Fatalf("the TLS collector has no line of the sync a minute after it; it has %d lines", len(collector.All()))
		}
	}
	t.Logf("the TLS syslog collector took the box's lines once its clock was right: %d lines", len(collector.All()))

	// Steady state with NTP polling and LLDP announcing: the card takes
	// at most 1 MB an hour (QEMU's count of what the guest wrote), over
	// ten idle minutes once the boot's own writes are done.
	idleGuests(t)
	if settle := v.Within(90*time.Second) - time.Duration(system(t, v).UptimeSeconds*float64(time.Second)); settle > 0 {
		time.Sleep(settle)
	}
	w0, _, err := v.DiskWrites()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	time.Sleep(10 * time.Minute)
	w1, _, err := v.DiskWrites()
	if err != nil {
		t.Fatal(err)
	}
	perHour := float64(w1-w0) * float64(time.Hour) / float64(time.Since(start))
	t.Logf("flash writes with NTP and LLDP running: %d bytes in %v, %.0f bytes an hour", w1-w0, time.Since(start).Round(time.Second), perHour)
	if perHour > 1e6 {
		t.Errorf("the box writes %.0f bytes an hour to its card in steady state, want at most 1 MB", perHour)
	}
	if st := system(t, v).Time; st == nil || !st.Synced {
		t.Errorf("the clock lost its sync during the idle minutes: %+v", st)
	}
}
