// Package timesync keeps the box's clock. Its NTP client (RFC 5905's
// client mode through github.com/beevik/ntp, the library gokrazy's own
// ntp program uses: it validates each answer and computes offset and
// root distance, so none of that protocol is ours to get wrong) asks the
// configured servers, steps the clock once at the first sync when it is
// far off, as chrony does at start, and slews it after, so that no
// timestamp or timeout jumps in steady state. The last good time goes to
// /perm at most once an hour (a few kilobytes of the card's write budget
// a day), so that a box whose clock battery is dead starts no earlier
// than its last run.
package timesync

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/beevik/ntp"

	"github.com/ncpos/ncpos/boxaddr"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/ipc/health"
	"github.com/ncpos/ncpos/web/api"
)

// Defaults of a Keeper.
const (
	// DefaultPoll is the time between rounds once synced: NTP's minpoll
	// of 64 s, gentle on public servers.
	DefaultPoll = 64 * time.Second
	// DefaultFirstPoll is the first wait before a round is tried again
	// while not synced (doubled each time up to the poll): a box whose
	// network comes up late syncs seconds after it does.
	DefaultFirstPoll = 2 * time.Second
	// DefaultStepOver is the offset beyond which the first sync steps
	// the clock (chrony's makestep 1.0): slewed at the kernel's rate of
	// 0.5 ms a second, one second takes half an hour.
	DefaultStepOver = time.Second
	// DefaultSaveEvery is how often the last good time is kept.
	DefaultSaveEvery = time.Hour
	// queryTimeout bounds one server's answer.
	queryTimeout = 2 * time.Second
)

// Keeper is the box's NTP client.
type Keeper struct {
	Clock Clock
	// Query asks one server (host:port); nil: NTP over UDP.
	Query func(server string) (*ntp.Response, error)
	// SaveFile keeps the last good time; "": none is kept.
	SaveFile string
	// Note turns a sync, a loss of sync and a failure to keep the time
	// into events.
	Note func(sev events.Severity, msg string)
	// Stepped is told of a step of the clock, once it is made.
	Stepped func(d time.Duration)
	// Conditions is told after each round of the box conditions the
	// clock is in: clock_not_synced, name_unresolved.
	Conditions func([]health.Condition)
	// Grace is how long configured servers may take to sync before
	// the box is in clock_not_synced (a minute when 0).
	Grace time.Duration
	// Poll, FirstPoll, StepOver, SaveEvery: the Default* values when 0.
	// LossAfter is how long without a good answer loses the sync
	// (4.5 polls when 0).
	Poll, FirstPoll, StepOver, SaveEvery, LossAfter time.Duration

	mu       sync.Mutex
	servers  []string
	st       api.TimeSync
	kick     chan struct{}
	lastGood time.Time // monotonic: the last good answer
	lastSave time.Time // monotonic: the last time kept (or the start)
	wait     time.Duration
	asked    time.Time                 // monotonic: when the servers were set
	since    map[health.Kind]time.Time // when each condition began
	dnsErrs  []string                  // the last round's names that did not resolve
}

// SetServers makes servers the ones asked, from the next round, which
// starts at once.
func (k *Keeper) SetServers(servers []string) {
	k.mu.Lock()
	k.servers = slices.Clone(servers)
	k.st.Servers = slices.Clone(servers)
	k.wait = 0
	k.asked = time.Now()
	kick := k.kickLocked()
	k.mu.Unlock()
	select {
	case kick <- struct{}{}:
	default:
	}
}

func (k *Keeper) kickLocked() chan struct{} {
	if k.kick == nil {
		k.kick = make(chan struct{}, 1)
	}
	return k.kick
}

// Status is the clock's state now.
func (k *Keeper) Status() api.TimeSync {
	k.mu.Lock()
	defer k.mu.Unlock()
	st := k.st
	st.Servers = slices.Clone(k.servers)
	if st.Servers == nil {
		st.Servers = []string{}
	}
	return st
}

// Run keeps the clock until ctx ends.
func (k *Keeper) Run(ctx context.Context) {
	k.mu.Lock()
	kick := k.kickLocked()
	if k.lastSave.IsZero() {
		k.lastSave = time.Now()
	}
	k.mu.Unlock()
	for {
		wait := k.Round()
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-time.After(wait):
		}
	}
}

// Round asks every server once, steers the clock by the best answer,
// tells the conditions it is in and returns how long to wait before the
// next round.
func (k *Keeper) Round() time.Duration {
	wait := k.round()
	if k.Conditions != nil {
		k.Conditions(k.conditions())
	}
	return wait
}

func (k *Keeper) round() time.Duration {
	k.mu.Lock()
	servers := slices.Clone(k.servers)
	k.mu.Unlock()
	best, server, dns, err := k.ask(servers)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dnsErrs = dns
	if err != nil {
		k.st.Error = err.Error()
		if k.st.Synced && len(servers) == 0 {
			k.st.Synced = false
			k.note(events.Notice, "clock no longer kept: no NTP servers configured")
		}
		if k.st.Synced && time.Since(k.lastGood) > k.lossAfter() {
			k.st.Synced = false
			k.note(events.Warning, fmt.Sprintf("clock no longer synced: no good answer for %v (%v)", time.Since(k.lastGood).Round(time.Second), err))
		}
		k.saveLocked(false)
		return k.backoff()
	}
	first, again := k.st.FirstSync.IsZero(), !k.st.Synced && !k.st.FirstSync.IsZero()
	off := best.ClockOffset
	var steer error
	if first && abs(off) > or(k.StepOver, DefaultStepOver) {
		if steer = k.Clock.Step(off); steer == nil {
			k.st.StepSeconds = off.Seconds()
			if k.Stepped != nil {
				k.Stepped(off)
			}
		}
	} else {
		steer = k.Clock.Slew(off)
	}
	if steer != nil {
		k.st.Error = steer.Error()
		k.note(events.Critical, "clock not steered: "+steer.Error())
		return k.backoff()
	}
	if err := k.Clock.Synced(best.RootDistance); err != nil {
		k.note(events.Warning, err.Error())
	}
	now := k.Clock.Now()
	k.lastGood = time.Now()
	k.st.Synced, k.st.Server, k.st.Stratum, k.st.Error = true, server, int(best.Stratum), ""
	k.st.OffsetSeconds, k.st.RootDistanceSeconds, k.st.LastSync = off.Seconds(), best.RootDistance.Seconds(), now.UTC()
	switch {
	case first:
		k.st.FirstSync = now.UTC()
		how := fmt.Sprintf("stepped by %v", off.Round(time.Millisecond))
		if k.st.StepSeconds == 0 {
			how = fmt.Sprintf("offset %v, slewed", off.Round(time.Microsecond))
		}
		k.note(events.Notice, fmt.Sprintf("clock synced with %s (stratum %d): %s", server, best.Stratum, how))
	case again:
		k.note(events.Notice, fmt.Sprintf("clock synced again with %s (stratum %d): offset %v", server, best.Stratum, off.Round(time.Microsecond)))
	}
	k.saveLocked(first)
	k.wait = 0
	return or(k.Poll, DefaultPoll)
}

// ask queries each server and returns the answer with the least root
// distance, or why none would do, and the servers whose names did not
// resolve, with why.
func (k *Keeper) ask(servers []string) (*ntp.Response, string, []string, error) {
	if len(servers) == 0 {
		return nil, "", nil, errors.New("no NTP servers configured")
	}
	query := k.Query
	if query == nil {
		query = func(s string) (*ntp.Response, error) {
			return ntp.QueryWithOptions(s, ntp.QueryOptions{Timeout: queryTimeout})
		}
	}
	var best *ntp.Response
	var bestServer string
	var errs, dns []string
	for _, s := range servers {
		a, err := boxaddr.Parse(s, 123)
		var r *ntp.Response
		if err == nil {
			r, err = query(a.String())
		}
		if err == nil {
			err = r.Validate()
		}
		if err != nil {
			errs = append(errs, s+": "+err.Error())
			var dnsErr *net.DNSError
			if errors.As(err, &dnsErr) {
				dns = append(dns, s+": "+dnsErr.Error())
			}
			continue
		}
		if best == nil || r.RootDistance < best.RootDistance {
			best, bestServer = r, s
		}
	}
	if best == nil {
		return nil, "", dns, errors.New(strings.Join(errs, "; "))
	}
	return best, bestServer, dns, nil
}

// conditions are the box conditions the clock is in now.
func (k *Keeper) conditions() []health.Condition {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []health.Condition
	add := func(kind health.Kind, detail string) {
		if k.since == nil {
			k.since = map[health.Kind]time.Time{}
		}
		since, ok := k.since[kind]
		if !ok {
			since = k.Clock.Now().UTC()
			k.since[kind] = since
		}
		out = append(out, health.Condition{Kind: kind, Source: "statusd", Since: since, Detail: detail})
	}
	if len(k.dnsErrs) > 0 {
		add(health.NameUnresolved, "NTP servers whose names do not resolve: "+strings.Join(k.dnsErrs, "; "))
	}
	grace := k.Grace
	if grace <= 0 {
		grace = time.Minute
	}
	if len(k.servers) > 0 && !k.st.Synced && time.Since(k.asked) >= grace {
		add(health.ClockNotSynced, "no NTP server answered well: "+k.st.Error)
	}
	for kind := range k.since {
		if !slices.ContainsFunc(out, func(c health.Condition) bool { return c.Kind == kind }) {
			delete(k.since, kind)
		}
	}
	return out
}

// backoff is the wait after a round that did not sync.
func (k *Keeper) backoff() time.Duration {
	poll := or(k.Poll, DefaultPoll)
	if k.wait == 0 {
		k.wait = or(k.FirstPoll, DefaultFirstPoll)
	} else {
		k.wait = min(2*k.wait, poll)
	}
	return k.wait
}

func (k *Keeper) lossAfter() time.Duration {
	if k.LossAfter > 0 {
		return k.LossAfter
	}
	return or(k.Poll, DefaultPoll) * 9 / 2
}

// saveLocked keeps the time now when asked, or when the last was kept
// SaveEvery ago.
func (k *Keeper) saveLocked(now bool) {
	if k.SaveFile == "" || !now && time.Since(k.lastSave) < or(k.SaveEvery, DefaultSaveEvery) {
		return
	}
	k.lastSave = time.Now()
	if err := Save(k.SaveFile, k.Clock.Now()); err != nil {
		k.note(events.Warning, "keeping the time: "+err.Error())
	}
}

func (k *Keeper) note(sev events.Severity, msg string) {
	if k.Note != nil {
		k.Note(sev, msg)
	}
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
