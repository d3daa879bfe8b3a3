package fleet

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ncpos/ncpos/web/api"
)

// Waves parses a wave plan such as "1,25%,100%" for n boxes: how many
// boxes have the change after each wave, a count or a share of n
// (rounded up), growing, the last all of them.
func Waves(spec string, n int) ([]int, error) {
	var out []int
	for _, w := range strings.Split(spec, ",") {
		w = strings.TrimSpace(w)
		var k int
		if pct, ok := strings.CutSuffix(w, "%"); ok {
			p, err := strconv.ParseFloat(pct, 64)
			if err != nil || p <= 0 || p > 100 {
				return nil, fmt.Errorf("waves %q: %q is not a share of 1%% to 100%%", spec, w)
			}
			k = int(float64(n)*p/100 + 0.999999)
		} else {
			c, err := strconv.Atoi(w)
			if err != nil || c <= 0 {
				return nil, fmt.Errorf("waves %q: %q is not a count of boxes or a share", spec, w)
			}
			k = c
		}
		k = min(k, n)
		if len(out) > 0 && k <= out[len(out)-1] {
			continue // a wave that adds no box
		}
		out = append(out, k)
	}
	if len(out) == 0 || out[len(out)-1] != n {
		return nil, fmt.Errorf("waves %q: the last wave must reach every box (%d), e.g. 100%%", spec, n)
	}
	return out, nil
}

// ConfigChange is a configuration applied across boxes.
type ConfigChange struct {
	Text    string
	Comment string
	// Within is each box's confirm deadline; Watch how long each wave's
	// boxes are watched before they are confirmed (longer than the
	// boxes' own grace for a change that does not run well, 15 s).
	Within, Watch time.Duration
	Logf          func(format string, args ...any)
}

// ConfigResult is what became of the change on one box.
type ConfigResult struct {
	Box     string
	Wave    int // 1-based
	Version int // the version the change made; 0: none
	// State is the version's state at the end: confirmed, reverted, or
	// pending when the box did not answer to be confirmed; "unchanged"
	// when the box runs this configuration already; "" when the box was
	// not reached or refused the change.
	State  string
	Reason string // why it was reverted, refused or not reached
	Took   time.Duration
}

// errWaveFailed is a wave in which a box reverted the change, refused it
// or could not be reached: the boxes of the later waves are not touched.
var errWaveFailed = errors.New("the change failed on a box")

// ApplyConfig applies a configuration to boxes in waves (Waves): each
// wave's boxes take it at once, each with a confirm deadline; they are
// watched for Watch, and confirmed over a new connection only when none of
// them reverted or failed. The first wave with a box that did stops the
// rollout, and that wave's other boxes are left to go back by themselves
// at their deadlines unless confirmed by hand.
func (a *Asker) ApplyConfig(ctx context.Context, boxes []Box, waves []int, ch ConfigChange) ([]ConfigResult, error) {
	logf := ch.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	var out []ConfigResult
	done := 0
	for w, upTo := range waves {
		wave := boxes[done:upTo]
		done = upTo
		results := make([]ConfigResult, len(wave))
		var wg sync.WaitGroup
		for i, b := range wave {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = a.applyOne(ctx, b, ch)
				results[i].Wave = w + 1
			}()
		}
		wg.Wait()
		failed := false
		for _, r := range results {
			failed = failed || r.State == ""
			logf("wave %d: %s: %s", w+1, r.Box, describe(r))
		}
		if !failed {
			logf("wave %d: watching %d box(es) for %v", w+1, len(wave), ch.Watch)
			results, failed = a.watchAndConfirm(ctx, wave, results, ch.Watch)
			for _, r := range results {
				logf("wave %d: %s: %s", w+1, r.Box, describe(r))
			}
		}
		out = append(out, results...)
		if failed {
			return out, fmt.Errorf("%w in wave %d of %d: %d box(es) not touched", errWaveFailed, w+1, len(waves), len(boxes)-done)
		}
	}
	return out, nil
}

func describe(r ConfigResult) string {
	switch {
	case r.State == "":
		return "failed: " + r.Reason
	case r.Reason != "":
		return fmt.Sprintf("version %d %s: %s", r.Version, r.State, r.Reason)
	}
	return fmt.Sprintf("version %d %s (%v)", r.Version, r.State, r.Took.Round(time.Millisecond))
}

// client is statusd's API client for box b.
func (a *Asker) client(b Box) *api.Client {
	c := &api.Client{URL: "https://" + b.Address + "/", TLS: a.TLS(b)}
	if a.Password != nil {
		c.Password = a.Password(b)
	}
	return c
}

// applyOne applies the change to one box in place of the version in
// force there.
func (a *Asker) applyOne(ctx context.Context, b Box, ch ConfigChange) ConfigResult {
	r := ConfigResult{Box: b.Name}
	if b.Address == "" {
		r.Reason = "no address yet (ncpos fleet add sets one)"
		return r
	}
	start := time.Now()
	c := a.client(b)
	plan, check, err := c.PlanConfig(ctx, ch.Text)
	switch {
	case err != nil:
		r.Reason = err.Error()
		return r
	case check != nil:
		r.Reason = fmt.Sprintf("the box refuses the configuration: %s", check.Errors[0].Message)
		return r
	case len(plan.Changes) == 0:
		r.Version, r.State = plan.Version, "unchanged"
		return r
	}
	within := int(ch.Within / time.Second)
	res, err := c.ApplyConfig(ctx, api.ConfigApply{Text: ch.Text, Replaces: plan.Version, ConfirmWithin: &within, Comment: ch.Comment})
	if err != nil {
		if cf, ok := api.Conflict(err); ok {
			r.Reason = cf.Error
		} else {
			r.Reason = err.Error()
		}
		return r
	}
	r.Version, r.State, r.Took = res.Version.Number, res.Version.State, time.Since(start)
	return r
}

// watchAndConfirm watches a wave's pending versions for d, then confirms
// them over new connections unless one of them was reverted or its box
// stopped answering; failed says that happened.
func (a *Asker) watchAndConfirm(ctx context.Context, wave []Box, results []ConfigResult, d time.Duration) ([]ConfigResult, bool) {
	deadline := time.Now().Add(d)
	for {
		failed := false
		for i, b := range wave {
			r := &results[i]
			if r.State != api.VersionPending {
				continue
			}
			v, err := a.version(ctx, b, r.Version)
			switch {
			case err != nil:
				r.Reason = "not answering after the change: " + err.Error()
			case v.Undone():
				r.State, r.Reason = string(v.State), v.Reason
				failed = true
			default:
				r.Reason = ""
			}
		}
		if failed {
			return results, true
		}
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return results, true
		case <-time.After(time.Second):
		}
	}
	failed := false
	for i, b := range wave {
		r := &results[i]
		if r.State != api.VersionPending {
			continue
		}
		if r.Reason != "" {
			failed = true // left to go back by itself at its deadline
			continue
		}
		v, err := a.client(b).ConfirmConfig(ctx, r.Version)
		if err != nil {
			r.Reason, failed = "confirming: "+err.Error(), true
			continue
		}
		r.State = string(v.State)
	}
	return results, failed
}

// version reads version n of box b from its history.
func (a *Asker) version(ctx context.Context, b Box, n int) (api.Version, error) {
	h, err := a.client(b).ConfigHistory(ctx)
	if err != nil {
		return api.Version{}, err
	}
	for _, v := range h.Versions {
		if v.Number == n {
			return v.Version, nil
		}
	}
	return api.Version{}, fmt.Errorf("version %d is not in the box's history", n)
}
