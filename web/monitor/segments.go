package monitor

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ncpos/ncpos/ipc/health"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/web/api"
)

// daemonNote says why a daemon's /status is missing: "" when it answered,
// "not running" when init starts it, "not configured" when init does not.
func daemonNote(daemon string, err error, down bool, services []string) string {
	switch {
	case err == nil:
		return ""
	case down && slices.Contains(services, daemon):
		return daemon + " not running"
	case down:
		return daemon + " not configured"
	}
	return daemon + ": " + err.Error()
}

// segments joins the configuration with what forwarderd and bypassd say
// (fwdNote and bypNote: why they said nothing, see daemonNote).
func segments(cfg *config.Config, fwd forwarderapi.Status, fwdNote string, byp bypassapi.Status, bypNote string) []api.Segment {
	out := []api.Segment{}
	for _, cs := range cfg.Segments {
		s := api.Segment{
			Name: cs.Name, Ports: append([]string{}, cs.Ports...),
			Mode: cfg.Forwarder.Mode, Engine: cfg.Forwarder.Engine,
			Cores: []int{}, CoresConfigured: cfg.Forwarder.Cores, BypassPair: cs.Bypass,
		}
		if s.ForwarderNote = fwdNote; fwdNote == "" {
			s.Mode, s.Engine = fwd.Mode, fwd.Engine
			s.Cores = append(s.Cores, fwd.Cores.Forwarding...)
			s.ForwarderNote = "forwarderd does not report this segment"
			for _, fs := range fwd.Segments {
				if fs.Name == cs.Name {
					f := &api.SegmentForwarding{Healthy: fs.Forwarding, Conditions: fs.Conditions, Packets: fs.Packets, Forwarded: fs.Forwarded, Malformed: fs.Malformed}
					if f.Conditions == nil {
						f.Conditions = []health.Condition{}
					}
					var words []string
					for _, c := range fs.Conditions {
						words = append(words, c.Detail)
					}
					f.Problem = strings.Join(words, "; ")
					for _, n := range fs.Drops {
						f.Drops += n
					}
					s.Forwarding, s.ForwarderNote = f, ""
				}
			}
		}
		switch {
		case cs.Bypass == "":
			s.BypassNote = "no bypass relay"
		case bypNote != "":
			s.BypassNote = bypNote
		default:
			if b, ok := BypassPair(&byp, cs.Name, cs.Bypass); ok {
				s.Bypass = b
			} else {
				s.BypassNote = "bypassd does not report this segment"
			}
		}
		out = append(out, s)
	}
	return out
}

func (m *Monitor) bypassEvents(segs []api.Segment) {
	for _, s := range segs {
		if s.Bypass == nil {
			continue
		}
		b := s.Bypass
		was, seen := m.st.bypass[s.Name]
		m.st.bypass[s.Name] = b.State
		if was == b.State || (!seen && b.State == "normal") {
			continue
		}
		sev := events.Warning
		if b.State == "normal" {
			sev = events.Notice
		}
		fields := []string{"segment", s.Name, "state", b.State, "reason", b.Reason}
		msg := fmt.Sprintf("segment %s %s", s.Name, stateText(b.State))
		if b.Reason != "" {
			msg += ": " + b.Reason
		}
		if o := b.Override; o != nil {
			fields = append(fields, "override", o.Reason, "override_by", o.By)
		}
		if seen {
			msg += " (was " + was + ")"
		}
		m.event(sev, events.KindBypass, fields, "%s", msg)
	}
}

func stateText(state string) string {
	switch state {
	case "bypass":
		return "in bypass"
	case "disconnect":
		return "disconnected"
	case "normal":
		return "forwarding normally"
	}
	return state
}
