package update

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/web/api"
)

// Reboot asks statusd for a planned reboot (a full reboot through the
// firmware, not kexec, so the bootloader reads the new configuration;
// recorded, so the next boot does not blame the watchdog). The connection
// may drop while the appliance goes down; that is success.
func (c *Client) Reboot(ctx context.Context, reason string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := c.postJSON(ctx, "api/v1/control/reboot", api.RebootRequest{Reason: reason})
	if err != nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		return nil
	}
	return err
}

// DefaultLease is how long the bypass overrides of an update outlast the
// client's last renewal of them: a client killed or cut off mid-update
// leaves its segments in bypass for at most that long, not for a
// maintenance window. It covers a reboot into the test boot and a
// fallback from it (panic, watchdog reset, boot) with room to spare.
const DefaultLease = 10 * time.Minute

// Bypass asks statusd to put every segment that has a bypass relay into
// bypass before the update, for lease (RenewBypass keeps them). It returns
// the segments it overrode and an error naming what could not be done;
// segments without a relay are reported too, since their traffic stops
// during the reboot. A segment an operator holds by an override of their
// own (a maintenance window) is left as it is, neither replaced nor, at
// the end, ended: held says which, with the override.
func (c *Client) Bypass(ctx context.Context, reason string, lease time.Duration) (done []string, held map[string]api.Override, err error) {
	segs, err := c.Segments(ctx)
	if err != nil {
		return nil, nil, err
	}
	var problems []string
	for _, s := range segs {
		if s.BypassPair == "" {
			problems = append(problems, fmt.Sprintf("segment %s has no bypass relay", s.Name))
			continue
		}
		if o := operatorOverride(s); o != nil {
			if held == nil {
				held = map[string]api.Override{}
			}
			held[s.Name] = *o
			continue
		}
		if err := c.override(ctx, s.Name, reason, lease); err != nil {
			problems = append(problems, fmt.Sprintf("segment %s: %v", s.Name, err))
			continue
		}
		done = append(done, s.Name)
	}
	if len(problems) > 0 {
		return done, held, errors.New(strings.Join(problems, "; "))
	}
	return done, held, nil
}

// override sets segment's relay into bypass for lease, marked as an
// update's. A build from before that mark refuses the field it does not
// know (400): its overrides go unmarked from then on.
func (c *Client) override(ctx context.Context, segment, reason string, lease time.Duration) error {
	req := api.BypassRequest{Segment: segment, State: string(bypassapi.Bypass), Reason: reason, ExpiresIn: lease.String()}
	for {
		req.Update = !c.unmarked.Load()
		err := c.postJSON(ctx, "api/v1/control/bypass", req)
		var se *api.StatusError
		if errors.As(err, &se) && se.Code == http.StatusBadRequest && req.Update {
			c.unmarked.Store(true)
			continue
		}
		return err
	}
}

// operatorOverride is the override an operator holds segment s by, one
// that no update set, or nil.
func operatorOverride(s api.Segment) *api.Override {
	if s.Bypass != nil && s.Bypass.Override != nil && !s.Bypass.Override.Update {
		return s.Bypass.Override
	}
	return nil
}

// Leftovers are the segments whose relays an earlier update left in
// bypass: its client died before it could end its overrides.
func Leftovers(segs []api.Segment) []string {
	var out []string
	for _, s := range segs {
		if s.Bypass != nil && s.Bypass.Override != nil && s.Bypass.Override.Update {
			out = append(out, s.Name)
		}
	}
	return out
}

// endLeftovers ends the overrides an earlier update left on segments and
// waits up to patience for them to forward again, so that the new
// update's baseline is what they do rather than what its relay's bypass
// makes of them (a relay that cuts the links shows them down). It
// returns the segments as they are then.
func (c *Client) endLeftovers(ctx context.Context, segments []string, patience time.Duration, logf func(string, ...any)) ([]api.Segment, error) {
	logf("an earlier update that did not end (its client stopped) left its bypass overrides on %s; ending them first", strings.Join(segments, ", "))
	if err := c.EndBypass(ctx, segments); err != nil {
		return nil, fmt.Errorf("ending an earlier update's bypass overrides: %w", err)
	}
	deadline := time.Now().Add(patience)
	for {
		segs, err := c.Segments(ctx)
		if err != nil {
			return nil, err
		}
		var waiting []string
		for _, s := range segs {
			if slices.Contains(segments, s.Name) && (s.Forwarding == nil || !s.Forwarding.Healthy) {
				waiting = append(waiting, s.Name)
			}
		}
		if len(waiting) == 0 {
			return segs, nil
		}
		if time.Now().After(deadline) {
			logf("segments %s do not forward %v after the earlier update's overrides ended; taking them as they are", strings.Join(waiting, ", "), patience)
			return segs, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// RenewBypass sets the overrides of segments again, for lease, every
// fifth of it, until the returned stop is called (stop waits for a
// renewal under way; calling it again does nothing). A renewal the box
// misses (it reboots) is logged and tried again at the next.
func (c *Client) RenewBypass(ctx context.Context, segments []string, reason string, lease time.Duration, logf func(string, ...any)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ticker := c.ticker
		if ticker == nil {
			ticker = func(d time.Duration) (<-chan time.Time, func()) {
				t := time.NewTicker(d)
				return t.C, t.Stop
			}
		}
		tick, stopTicker := ticker(lease / 5)
		defer stopTicker()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick:
			}
			for _, s := range segments {
				if err := c.override(ctx, s, reason, lease); err != nil && ctx.Err() == nil {
					logf("renewing the bypass override of segment %s: %v (tried again in %v)", s, err, lease/5)
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
}

// EndBypass ends the overrides Bypass set (state auto), retrying for a
// while: the appliance may still be rebooting.
func (c *Client) EndBypass(ctx context.Context, segments []string) error {
	var err error
	for try := 0; try < 30 && len(segments) > 0; try++ {
		if try > 0 {
			time.Sleep(2 * time.Second)
		}
		var left []string
		err = nil
		for _, s := range segments {
			if e := c.postJSON(ctx, "api/v1/control/bypass", api.BypassRequest{Segment: s, State: api.OverrideAuto}); e != nil {
				left, err = append(left, s), e
			}
		}
		segments = left
	}
	return err
}

// statusd is the box's statusd, through the client's HTTP client.
func (c *Client) statusd() *api.Client {
	return &api.Client{URL: c.StatusURL, Password: c.Password, HTTP: c.http()}
}

// getJSON reads path into v, within 10 s.
func (c *Client) getJSON(ctx context.Context, path string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return c.statusd().Get(ctx, path, v)
}

// postJSON sends req to path, within 10 s; a refusal is an
// *api.StatusError.
func (c *Client) postJSON(ctx context.Context, path string, req any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return c.statusd().Post(ctx, path, req, nil)
}
