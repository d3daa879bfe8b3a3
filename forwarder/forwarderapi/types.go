// Package forwarderapi is forwarderd's contract: what it reports on its
// unix socket (engine, cores, segments, ports with their counters, NIC
// settings and drops, the flow table) and the Client every caller asks
// forwarderd with.
package forwarderapi

import (
	"time"

	"github.com/ncpos/ncpos/ipc/health"
)

// Status is forwarderd's /status.
type Status struct {
	Engine     string             `json:"engine"`
	Mode       string             `json:"mode"`
	Started    time.Time          `json:"started"`
	Heartbeat  time.Time          `json:"heartbeat"`
	Live       health.Liveness    `json:"live"`
	Conditions []health.Condition `json:"conditions"`
	Cores      CorePlan           `json:"cores"`
	Segments   []SegmentStatus    `json:"segments"`
	Ports      []PortStatus       `json:"ports"`
	Flows      *FlowStats         `json:"flows,omitempty"`
	// Notes say what the datapath cannot do on this box (say, count the
	// kernel's redirect failures), for people.
	Notes []string `json:"notes,omitempty"`
}

// PortStatus is one port: what entered it (datapath counters) and what
// left it (the kernel's interface counters).
type PortStatus struct {
	Name      string `json:"name"` // front-panel label
	Interface string `json:"interface"`
	Segment   string `json:"segment"`
	Peer      string `json:"peer"`
	Attach    string `json:"attach"` // xdp: native|generic; afxdp: zerocopy|copy
	Link      string `json:"link"`

	RxPackets uint64 `json:"rx_packets"` // entered the datapath here
	RxBytes   uint64 `json:"rx_bytes"`
	Passed    uint64 `json:"passed"`     // handed on towards the peer
	TxPackets uint64 `json:"tx_packets"` // left through this port (kernel)
	TxBytes   uint64 `json:"tx_bytes"`

	Drops            map[string]uint64 `json:"drops"`
	Malformed        uint64            `json:"malformed"`
	MalformedReasons map[string]uint64 `json:"malformed_reasons"`

	// MTU is the port's MTU as set for its segment; MaxFrame the longest
	// frame (without FCS) the port forwards at that MTU and attach mode.
	MTU      int `json:"mtu"`
	MaxFrame int `json:"max_frame"`
	// XDPFeatures are what the driver says it can do (the kernel's XDP
	// feature flags), AttachWhy why Attach was chosen.
	XDPFeatures []string `json:"xdp_features,omitempty"`
	AttachWhy   string   `json:"attach_why,omitempty"`
	// Settings are what ncpos set on the NIC before attaching, as read
	// back from the driver.
	Settings []PortSetting `json:"settings"`
	// Neighbors are the stations whose LLDP frames the port received,
	// until their TTL runs out; LLDPRejected counts the LLDP frames it
	// could not read, LLDPLastError says why the last was not, and
	// LLDPDropped counts the newcomers its full table dropped
	// (16 a port; LLDP-MIB's lldpStatsRemTablesDrops).
	Neighbors     []Neighbor `json:"lldp_neighbors,omitempty"`
	LLDPRejected  uint64     `json:"lldp_rejected,omitempty"`
	LLDPLastError string     `json:"lldp_last_error,omitempty"`
	LLDPDropped   uint64     `json:"lldp_dropped,omitempty"`
}

// PortSetting is one NIC setting ncpos makes on a segment port and what
// the driver did with it.
type PortSetting struct {
	Name   string `json:"name"` // ethtool's name: rx-vlan-hw-parse, pause, disable-fw-lldp, …
	Want   string `json:"want"` // "off" or "on"
	Got    string `json:"got"`  // as read back; "" when the driver does not offer it
	Result string `json:"result"`
	Detail string `json:"detail,omitempty"`
}

// The results of a PortSetting.
const (
	SettingSet        = "set"         // changed, and read back as wanted
	SettingAlready    = "already"     // was as wanted
	SettingNotOffered = "not_offered" // the driver has no such thing: nothing to change
	SettingRefused    = "refused"     // the driver keeps it otherwise (fixed, or the change failed)
)

// SegmentStatus sums a segment's two ports.
type SegmentStatus struct {
	Name             string            `json:"name"`
	Ports            [2]string         `json:"ports"`
	Packets          uint64            `json:"packets"` // entered, both directions
	Bytes            uint64            `json:"bytes"`
	Forwarded        uint64            `json:"forwarded"` // left, both directions
	Drops            map[string]uint64 `json:"drops"`
	Malformed        uint64            `json:"malformed"`
	MalformedReasons map[string]uint64 `json:"malformed_reasons"`
	// Forwarding: the segment has no condition (every port present and
	// up, frames that enter leave).
	Forwarding bool               `json:"forwarding"`
	Conditions []health.Condition `json:"conditions"`
}

// CorePlan is how the forwarder associated ports with cores: which CPUs
// forward, which are kept for management, and for each port which queue is
// served by which CPU. Nobody pins by hand; this is reported on /status.
type CorePlan struct {
	Online     []int       `json:"online"`
	Forwarding []int       `json:"forwarding"`
	Management []int       `json:"management"`
	Note       string      `json:"note,omitempty"`
	Ports      []PortCores `json:"ports"`
}

// PortCores is one port's queues and where they are served.
type PortCores struct {
	Interface string      `json:"interface"`
	Channels  string      `json:"channels"` // what was done to the queue count, and why
	Queues    []QueueCore `json:"queues"`
}

// QueueCore is one receive queue and the CPU that serves it.
type QueueCore struct {
	Queue int    `json:"queue"`
	CPU   int    `json:"cpu"`
	IRQs  []int  `json:"irqs,omitempty"`
	IRQ   string `json:"irq"` // "pinned", "none (virtual device)" or the error
}

// FlowStats describe the service-mode flow table.
type FlowStats struct {
	TableSize int `json:"table_size"`
	// Flows is the number of flows in the table: the live entries found by
	// the last sweep plus those created since.
	Flows   int    `json:"flows"`
	Created uint64 `json:"created"` // flows inserted since start
	Expired uint64 `json:"expired"` // removed after IdleTimeout without a frame
	// Evicted are flows the table pushed out (least recently used first)
	// to make room: created − expired − live, as of the last sweep.
	Evicted      uint64  `json:"evicted"`
	InsertFailed uint64  `json:"insert_failed"`
	NewPerSecond float64 `json:"new_per_second"`
	IdleTimeout  string  `json:"idle_timeout"`
	LastSweep    string  `json:"last_sweep,omitempty"`
	SweepTime    string  `json:"sweep_time,omitempty"`
	// Top are the largest flows by bytes at the last sweep.
	Top []FlowEntry `json:"top,omitempty"`
}

// FlowEntry is one flow of the table.
type FlowEntry struct {
	Port      uint8     `json:"-"`
	Segment   string    `json:"segment,omitempty"`
	In        string    `json:"in,omitempty"` // the port the flow entered
	Proto     uint8     `json:"proto"`
	Src       string    `json:"src"`
	Dst       string    `json:"dst"`
	SrcPort   uint16    `json:"src_port,omitempty"`
	DstPort   uint16    `json:"dst_port,omitempty"`
	Packets   uint64    `json:"packets"`
	Bytes     uint64    `json:"bytes"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	TCPFlags  uint8     `json:"tcp_flags,omitempty"`
}

// Reconfigured is what forwarderd did to take a new configuration in
// place (POST /reconfigure), by segment name.
type Reconfigured struct {
	// Kept are the segments whose settings did not change: their
	// programs, map entries and counters were not touched.
	Kept []string `json:"kept,omitempty"`
	// Detached are the segments removed, and those changed (which are
	// also in Attached): each passed no frame between the two.
	Detached []string `json:"detached,omitempty"`
	Attached []string `json:"attached,omitempty"`
	// Failed are the segments that could not be attached, with why:
	// they are reported as not bridged until a configuration that
	// attaches them.
	Failed map[string]string `json:"failed,omitempty"`
	// Restarted says the engine was started anew (a setting of the
	// whole forwarder changed, or its engine takes segments only at
	// start): every segment was detached and attached again.
	Restarted bool `json:"restarted,omitempty"`
	// Error is what went wrong besides the segments that failed.
	Error string `json:"error,omitempty"`
	// TookMS is how long taking it took, in milliseconds.
	TookMS float64 `json:"took_ms"`
}

// Neighbor is a station whose LLDP frames a port received, as the port
// last heard it (IEEE 802.1AB; package lldp decodes the frames).
type Neighbor struct {
	Port string `json:"port"`
	// Index numbers the port's neighbours in the order they came, and
	// stays while the neighbour does (LLDP-MIB's lldpRemIndex).
	Index int `json:"index"`
	// ChassisID and PortID identify the neighbour and its port (802.1AB's
	// MSAP identifier), rendered by their subtypes: a MAC address as
	// aa:bb:…, a network address as an IP, a name as text.
	ChassisID        string `json:"chassis_id"`
	ChassisIDSubtype int    `json:"chassis_id_subtype"`
	PortID           string `json:"port_id"`
	PortIDSubtype    int    `json:"port_id_subtype"`
	// TTL is how long the neighbour's information stays valid, in
	// seconds; 0 means it is leaving (a shutdown LLDPDU).
	TTL               int    `json:"ttl_seconds"`
	PortDescription   string `json:"port_description,omitempty"`
	SystemName        string `json:"system_name,omitempty"`
	SystemDescription string `json:"system_description,omitempty"`
	// ManagementAddress is the first management address the frame names.
	ManagementAddress string    `json:"management_address,omitempty"`
	LastSeen          time.Time `json:"last_seen"`
	Expires           time.Time `json:"expires"` // LastSeen + TTL: aged out after
}
