package web

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ncpos/ncpos/forwarder/forwarderapi"
)

// PortCounters are the kernel's interface counters
// (/sys/class/net/<if>/statistics and carrier_changes). They count what the
// NIC received and sent, including frames the XDP datapath redirected.
type PortCounters struct {
	RxPackets      uint64 `json:"rx_packets"`
	TxPackets      uint64 `json:"tx_packets"`
	RxBytes        uint64 `json:"rx_bytes"`
	TxBytes        uint64 `json:"tx_bytes"`
	RxDropped      uint64 `json:"rx_dropped"`
	TxDropped      uint64 `json:"tx_dropped"`
	RxErrors       uint64 `json:"rx_errors"`
	TxErrors       uint64 `json:"tx_errors"`
	CarrierChanges uint64 `json:"carrier_changes"`
}

// PortRates are per-second rates between the last two samples.
type PortRates struct {
	RxPPS   float64 `json:"rx_pps"`
	TxPPS   float64 `json:"tx_pps"`
	RxBPS   float64 `json:"rx_bps"` // bits per second
	TxBPS   float64 `json:"tx_bps"`
	DropsPS float64 `json:"drops_ps"` // rx + tx dropped
	ErrsPS  float64 `json:"errors_ps"`
}

// RatePoint is one point of a port's live chart.
type RatePoint struct {
	T int64 `json:"t"` // Unix milliseconds
	PortRates
}

// Port is one front-panel port as the dashboard shows it.
type Port struct {
	Name      string       `json:"name"` // front-panel label, e.g. LAN1
	Interface string       `json:"interface"`
	Role      string       `json:"role"` // "management", "data" (in a segment) or "unused"
	Segment   string       `json:"segment,omitempty"`
	MAC       string       `json:"mac"`
	Link      string       `json:"link"` // operstate: up, down, lowerlayerdown, …
	Up        bool         `json:"up"`
	SpeedMbps int          `json:"speed_mbps"` // -1 when the driver does not say
	Duplex    string       `json:"duplex,omitempty"`
	LinkSince time.Time    `json:"link_since,omitzero"` // last link change statusd saw
	Counters  PortCounters `json:"counters"`
	Rates     PortRates    `json:"rates"`
	History   []RatePoint  `json:"history,omitempty"`
	Error     string       `json:"error,omitempty"`
	// Datapath is what forwarderd reports of a segment port.
	Datapath *PortDatapath `json:"datapath,omitempty"`
}

// PortDatapath is forwarderd's view of a segment port: how its program is
// attached and why, the MTU and longest frame it forwards, the NIC
// settings as the driver read them back, and its drops by reason.
type PortDatapath struct {
	Attach    string                     `json:"attach"`
	AttachWhy string                     `json:"attach_why,omitempty"`
	MTU       int                        `json:"mtu"`
	MaxFrame  int                        `json:"max_frame"`
	Settings  []forwarderapi.PortSetting `json:"settings"`
	Drops     map[string]uint64          `json:"drops,omitempty"`
}

// addDatapath fills in Datapath from forwarderd's ports, by interface.
func addDatapath(ports []Port, fwd []forwarderapi.PortStatus) {
	for i := range ports {
		for _, f := range fwd {
			if f.Interface == ports[i].Interface {
				ports[i].Datapath = &PortDatapath{Attach: f.Attach, AttachWhy: f.AttachWhy, MTU: f.MTU, MaxFrame: f.MaxFrame, Settings: f.Settings, Drops: f.Drops}
			}
		}
	}
}

// readPortCounters reads the counters of one interface.
func readPortCounters(root, ifname string) (PortCounters, error) {
	dir := filepath.Join(root, "sys/class/net", ifname)
	var c PortCounters
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
func rates(prev, cur PortCounters, dt time.Duration) PortRates {
	s := dt.Seconds()
	if s <= 0 {
		return PortRates{}
	}
	d := func(a, b uint64) float64 {
		if b < a {
			return 0
		}
		return float64(b-a) / s
	}
	return PortRates{
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
	pts  []RatePoint
	next int
	full bool
}

func newHistory(n int) *history { return &history{pts: make([]RatePoint, n)} }

func (h *history) add(p RatePoint) {
	h.pts[h.next] = p
	h.next = (h.next + 1) % len(h.pts)
	if h.next == 0 {
		h.full = true
	}
}

// points returns the last n points, oldest first (n <= 0: all).
func (h *history) points(n int) []RatePoint {
	var all []RatePoint
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
