package change

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ncpos/ncpos/appliance/initapi"
	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/watchdog/watchdogapi"
)

// DaemonTakers are forwarderd, bypassd and watchdogd as takers, and init
// for the box's own settings (its hostname and management address): each
// reads the configuration again when asked on its socket in runDir
// (POST /reconfigure), within timeout. A daemon that is not among the
// services the box runs takes nothing: whatever its settings say has no
// effect until it runs.
func DaemonTakers(runDir string, services []string, timeout time.Duration) map[string]Taker {
	out := map[string]Taker{}
	add := func(name string, take func(ctx context.Context) error) {
		if !slices.Contains(services, name) {
			take = func(context.Context) error { return nil }
		}
		out[name] = TakerFunc(take)
	}
	add(config.TakerForwarder, func(ctx context.Context) error {
		r, err := forwarderapi.NewClient(runDir, timeout).Reconfigure(ctx)
		if err != nil {
			return err
		}
		var errs []error
		for name, why := range r.Failed {
			errs = append(errs, fmt.Errorf("segment %s not attached: %s", name, why))
		}
		if r.Error != "" {
			errs = append(errs, errors.New(r.Error))
		}
		return errors.Join(errs...)
	})
	add(config.TakerBypass, func(ctx context.Context) error {
		_, err := bypassapi.NewClient(runDir, timeout).Reconfigure(ctx)
		return err
	})
	add(config.TakerWatchdog, func(ctx context.Context) error {
		_, err := watchdogapi.NewClient(runDir, timeout).Reconfigure(ctx)
		return err
	})
	out[config.TakerInit] = TakerFunc(func(ctx context.Context) error {
		_, err := initapi.NewClient(runDir, timeout).Reconfigure(ctx)
		return err
	})
	return out
}

// holdBy names the configuration change in bypassd's journal.
const holdBy = "configuration change"

// BypassHold is a Manager's Hold on a box that runs bypassd (nil on one
// that does not): the pairs of the segments re-attached are put in bypass
// over bypassd's socket in runDir for the change, each for at most two
// minutes should nothing clear it, and cleared after. A pair under an
// operator's override, or one without a relay that can be driven, is left
// as it is.
func BypassHold(runDir string, services []string, timeout time.Duration) func(context.Context, []string) (func(context.Context), error) {
	if !slices.Contains(services, config.TakerBypass) {
		return nil
	}
	return func(ctx context.Context, segments []string) (func(context.Context), error) {
		c := bypassapi.NewClient(runDir, timeout)
		st, err := c.Status(ctx)
		if err != nil {
			return nil, err
		}
		var held []string
		release := func(ctx context.Context) {
			for _, pair := range held {
				c.ClearOverride(ctx, pair, holdBy)
			}
		}
		for _, p := range st.Pairs {
			if !slices.Contains(segments, p.Segment) || p.Override != nil || p.Problem != "" {
				continue
			}
			_, err := c.Override(ctx, bypassapi.OverrideRequest{Pair: p.Name, State: bypassapi.Bypass, For: "2m", By: holdBy,
				Reason: "segment " + p.Segment + " re-attached by a configuration change"})
			if err != nil {
				release(ctx)
				return nil, err
			}
			held = append(held, p.Name)
		}
		return release, nil
	}
}
