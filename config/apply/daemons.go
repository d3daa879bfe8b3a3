package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/watchdog/watchdogapi"
)

// DaemonTakers are forwarderd, bypassd and watchdogd as takers: each reads
// the configuration again when asked on its socket in runDir
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
	return out
}
