package monitor

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/web/api"
)

// addDatapath fills in Datapath from forwarderd's ports, by interface.
func addDatapath(ports []api.Port, fwd []forwarderapi.PortStatus) {
	for i := range ports {
		for _, f := range fwd {
			if f.Interface == ports[i].Interface {
				ports[i].Datapath = &api.PortDatapath{Attach: f.Attach, AttachWhy: f.AttachWhy, MTU: f.MTU, MaxFrame: f.MaxFrame, Settings: apiSettings(f.Settings), Drops: f.Drops}
				ports[i].LLDP = &api.PortLLDP{Neighbors: apiNeighbors(f.Neighbors), Rejected: f.LLDPRejected, LastError: f.LLDPLastError, Dropped: f.LLDPDropped}
			}
		}
	}
}

// readPortCounters reads the counters of one interface.
func readPortCounters(root, ifname string) (api.PortCounters, error) {
	dir := filepath.Join(root, "sys/class/net", ifname)
	var c api.PortCounters
	fields := []struct {
		file string
		dst  *uint64
	}{
		{"statistics/rx_packets", &c.RxPackets}, {"statistics/tx_packets", &c.TxPackets},
		{"statistics/rx_bytes", &c.RxBytes}, {"statistics/tx_bytes", &c.TxBytes},
		{"statistics/rx_dropped", &c.RxDropped}, {"statistics/tx_dropped", &c.TxDropped},
		{"statistics/rx_errors", &c.RxErrors}, {"statistics/tx_errors", &c.TxErrors},
		{"carrier_changes", &c.CarrierChanges},
	}
	for _, f := range fields {
		b, err := os.ReadFile(filepath.Join(dir, f.file))
		if err != nil {
			if f.file == "carrier_changes" {
				continue // older kernels, some virtual devices
			}
			return c, fmt.Errorf("port counters of %s: %w", ifname, err)
		}
		v, err := strconv.ParseUint(string(trimNL(b)), 10, 64)
		if err != nil {
			return c, fmt.Errorf("port counters of %s: %s: %w", ifname, f.file, err)
		}
		*f.dst = v
	}
	return c, nil
}

// readLink reads the link state, speed and duplex. The kernel refuses to
// tell the speed of a link that is down (EINVAL): -1 then.
func readLink(root, ifname string) (state string, speed int, duplex string) {
	dir := filepath.Join(root, "sys/class/net", ifname)
	state = readTrim(filepath.Join(dir, "operstate"))
	if state == "" {
		state = "missing"
	}
	speed = -1
	if s, err := strconv.Atoi(readTrim(filepath.Join(dir, "speed"))); err == nil && s > 0 {
		speed = s
	}
	duplex = readTrim(filepath.Join(dir, "duplex"))
	if duplex == "unknown" {
		duplex = ""
	}
	return state, speed, duplex
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// rates computes per-second rates from two samples dt apart. A counter
// that went backwards (driver reset, interface re-created) gives 0.
func rates(prev, cur api.PortCounters, dt time.Duration) api.PortRates {
	s := dt.Seconds()
	if s <= 0 {
		return api.PortRates{}
	}
	d := func(a, b uint64) float64 {
		if b < a {
			return 0
		}
		return float64(b-a) / s
	}
	return api.PortRates{
		RxPPS:   round1(d(prev.RxPackets, cur.RxPackets)),
		TxPPS:   round1(d(prev.TxPackets, cur.TxPackets)),
		RxBPS:   round1(8 * d(prev.RxBytes, cur.RxBytes)),
		TxBPS:   round1(8 * d(prev.TxBytes, cur.TxBytes)),
		DropsPS: round1(d(prev.RxDropped, cur.RxDropped) + d(prev.TxDropped, cur.TxDropped)),
		ErrsPS:  round1(d(prev.RxErrors, cur.RxErrors) + d(prev.TxErrors, cur.TxErrors)),
	}
}

// history is a fixed-size ring of chart points.
type history struct {
	pts  []api.RatePoint
	next int
	full bool
}

func newHistory(n int) *history { return &history{pts: make([]api.RatePoint, n)} }

func (h *history) add(p api.RatePoint) {
	h.pts[h.next] = p
	h.next = (h.next + 1) % len(h.pts)
	if h.next == 0 {
		h.full = true
	}
}

// points returns the last n points, oldest first (n <= 0: all).
func (h *history) points(n int) []api.RatePoint {
	var all []api.RatePoint
	if h.full {
		all = append(append(all, h.pts[h.next:]...), h.pts[:h.next]...)
	} else {
		all = append(all, h.pts[:h.next]...)
	}
	if n > 0 && n < len(all) {
		all = all[len(all)-n:]
	}
	return all
}
