package monitor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/web/api"
)

// KnownDaemons are the appliance daemons statusd reports on, whether the
// configuration starts them or not.
var KnownDaemons = config.ServiceNames()

// BypassPair finds the pair of bypassd's status serving segment seg (by the
// pair's segment, else by the pair name the configuration gives).
func BypassPair(b *bypassapi.Status, seg, pair string) (*api.BypassState, bool) {
	for _, p := range b.Pairs {
		if (p.Segment != "" && p.Segment == seg) || (p.Segment == "" && p.Name == pair) {
			return &api.BypassState{Segment: seg, Pair: p.Name, Backend: p.Backend, State: string(p.State), Desired: string(p.Desired),
				Reason: p.Cause, Since: p.Since, Problem: p.Problem, HoldDown: time.Duration(p.HoldDown).String(), Override: apiOverride(p.Override)}, true
		}
	}
	return nil, false
}

// ReadSelfTest reads the latest report; nil, nil when there is none yet.
func ReadSelfTest(path string) (*api.SelfTest, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("self-test report: %w", err)
	}
	var st api.SelfTest
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("self-test report %s: %w", path, err)
	}
	return &st, nil
}
