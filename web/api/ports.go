package api

import (
	"time"
)

// Port is one front-panel port as the dashboard shows it: an entry of the
// status's "ports", and of GET /api/v1/ports.
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
	// LLDP is what the segment port learnt from the LLDP frames it
	// received (it forwards them unchanged and sends none).
	LLDP *PortLLDP `json:"lldp,omitempty"`
}

// PortLLDP is a port's LLDP neighbours, each until its TTL runs out, the
// LLDP frames it could not read, and the newcomers its full table
// dropped (16 a port; lldpStatsRemTablesDrops).
type PortLLDP struct {
	Neighbors []Neighbor `json:"neighbors"`
	Rejected  uint64     `json:"rejected"`
	LastError string     `json:"last_error,omitempty"`
	Dropped   uint64     `json:"dropped"`
}

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

// PortDatapath is forwarderd's view of a segment port: how its program is
// attached and why, the MTU and longest frame it forwards, the NIC
// settings as the driver read them back, and its drops by reason.
type PortDatapath struct {
	Attach    string            `json:"attach"`
	AttachWhy string            `json:"attach_why,omitempty"`
	MTU       int               `json:"mtu"`
	MaxFrame  int               `json:"max_frame"`
	Settings  []PortSetting     `json:"settings"`
	Drops     map[string]uint64 `json:"drops,omitempty"`
}
