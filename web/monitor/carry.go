package monitor

import (
	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/watchdog/watchdogapi"
	"github.com/ncpos/ncpos/web/api"
)

// The daemons' reports as the API carries them: the same fields, in the
// API's own types (web/api says why).

func apiOverride(o *bypassapi.Override) *api.Override {
	if o == nil {
		return nil
	}
	return &api.Override{State: string(o.State), Reason: o.Reason, By: o.By, Set: o.Set, Expires: o.Expires, Update: o.Update}
}

func apiPetter(st *watchdogapi.Status) *api.Petter {
	p := &api.Petter{Device: st.Device, Identity: st.Identity, Source: st.Source, TimeoutSec: st.TimeoutSec,
		TimeLeftSec: st.TimeLeftSec, IntervalSec: st.IntervalSec, Petting: st.Petting, StoppedReason: st.StoppedReason,
		InGrace: st.InGrace, Pings: st.Pings, LastPing: st.LastPing, LastPingError: st.LastPingError,
		LastReset: api.LastReset(st.LastReset)}
	for _, c := range st.Checks {
		p.Checks = append(p.Checks, api.PetterTest(c))
	}
	return p
}

func apiHolders(hs []watchdogapi.Holder) []api.Holder {
	if hs == nil {
		return nil
	}
	out := make([]api.Holder, len(hs))
	for i, h := range hs {
		out[i] = api.Holder(h)
	}
	return out
}

func apiSettings(ss []forwarderapi.PortSetting) []api.PortSetting {
	if ss == nil {
		return nil
	}
	out := make([]api.PortSetting, len(ss))
	for i, s := range ss {
		out[i] = api.PortSetting(s)
	}
	return out
}

func apiNeighbors(ns []forwarderapi.Neighbor) []api.Neighbor {
	out := make([]api.Neighbor, len(ns))
	for i, n := range ns {
		out[i] = api.Neighbor(n)
	}
	return out
}
