package config

import (
	"bytes"
	_ "embed"
	"fmt"
	"os"
	"slices"

	"github.com/pelletier/go-toml/v2"

	"github.com/ncpos/ncpos/sysinfo"
)

// Config is the whole appliance configuration, one ncpos.toml file. New
// fields go here with a toml tag, a default in defaults.go, a rule in
// validate.go and a commented line in default.toml.
type Config struct {
	Hostname string `toml:"hostname"` // appliance hostname
	Platform string `toml:"platform"` // platform profile name, see ProfileNames
	// Services lists the appliance daemons init supervises.
	Services []string `toml:"services"`

	Management Management `toml:"management"`
	Status     Status     `toml:"status"`
	Watchdog   Watchdog   `toml:"watchdog"`
	Forwarder  Forwarder  `toml:"forwarder"`
	Bypass     Bypass     `toml:"bypass"`
	Segments   []Segment  `toml:"segment"`
	Syslog     Syslog     `toml:"syslog"`
	SNMP       SNMP       `toml:"snmp"`
	SelfTest   SelfTest   `toml:"selftest"`
	Auth       Auth       `toml:"auth"`
	Time       Time       `toml:"time"`

	profile *Profile // set by validation
}

// Bypass tunes bypassd's policy.
type Bypass struct {
	// Budget bounds the time from the forwarder failing to the relays in
	// bypass: bypassd asks the forwarder every budget/6 and gives it
	// budget/3 to answer. A box in software emulation needs more than the
	// default.
	Budget Duration `toml:"budget"`
	// HoldDown is how long a segment must be healthy before its relay
	// goes back to normal (doubled by flap damping).
	HoldDown Duration `toml:"hold_down"`
	// StartHoldDown is the hold-down of a segment's first return to
	// normal after power-on: the relay has been in bypass since the box
	// went down and no failure came before, so there is nothing to damp.
	StartHoldDown Duration `toml:"start_hold_down"`
}

// Management is the management port's network setup. Only this port gets an
// address; the segment ports are transparent.
type Management struct {
	Port    string `toml:"port"`    // front-panel name; defaults to the profile's management port
	DHCP    bool   `toml:"dhcp"`    // DHCP client on the management port
	Address string `toml:"address"` // static IPv4 address in CIDR form, only with dhcp = false
	Gateway string `toml:"gateway"` // optional static default gateway, only with address
	// IPv6 is how the port gets its IPv6 address: IPv6Slaac from the
	// router's advertisements, IPv6Static as Address6 and Gateway6 say,
	// or IPv6Off.
	IPv6     string `toml:"ipv6"`
	Address6 string `toml:"address6"` // static IPv6 address in CIDR form, only with ipv6 = "static"
	Gateway6 string `toml:"gateway6"` // optional IPv6 default gateway, only with ipv6 = "static"
	// DNS are the servers names are looked up with (NTP, syslog and
	// RADIUS servers given by name); none: the DHCP lease's.
	DNS []string `toml:"dns"`
}

// The IPv6 setups of the management port.
const (
	IPv6Slaac  = "slaac"
	IPv6Static = "static"
	IPv6Off    = "off"
)

// Status configures statusd, the HTTP status page and API.
type Status struct {
	Port     int    `toml:"port"`      // HTTPS port on the management interface
	HTTPPort int    `toml:"http_port"` // plain HTTP port that only redirects to HTTPS; 0 = none
	AuthRead bool   `toml:"auth_read"` // reading needs a viewer too (the default); false opens it
	Password string `toml:"password"`  // control password in the clear (shared by every box with this file); prefer password_hash
	// PasswordHash is the control password as a bcrypt hash (ncpos
	// passwd prints one). Either one set overrides the per-box password
	// on /perm, and rotation from the dashboard is then refused.
	PasswordHash string `toml:"password_hash"`
	// Names the box is reached by besides its hostname and addresses (a
	// DNS name, a NAT address): requests for any other host are refused.
	Names []string `toml:"names"`
}

// Watchdog configures watchdogd and the hardware watchdog.
type Watchdog struct {
	Device    string   `toml:"device"`     // watchdog character device under /dev
	Timeout   Duration `toml:"timeout"`    // hardware timeout, whole seconds
	Interval  Duration `toml:"interval"`   // how often watchdogd checks health and pets
	BootGrace Duration `toml:"boot_grace"` // after boot, pet without gating on health
}

// Forwarder configures the datapath.
type Forwarder struct {
	Engine        string `toml:"engine"`          // "xdp" or "afxdp"
	Mode          string `toml:"mode"`            // "forward" or "service"
	Cores         int    `toml:"cores"`           // forwarding cores; 0 = all but one
	FlowTableSize int    `toml:"flow_table_size"` // flow table entries in service mode
	// FlowControl leaves 802.3x flow control (PAUSE) on the segment ports
	// as the driver negotiates it; off by default, so that a neighbour's
	// PAUSE frames pass like any other frame instead of stalling a port.
	FlowControl bool `toml:"flow_control"`
	// XDPMode is how the programs attach: "auto" runs each port native
	// where its driver and its peer's redirect natively (ncpos's kernel
	// gives the 82574L's e1000e that too), else generic; "native" wants
	// every port native, and bridges no segment while one cannot (each
	// says why); "generic" runs every port generic, the way back from a
	// driver that misbehaves natively.
	XDPMode string `toml:"xdp_mode"`
}

// Segment is a pair of ports bridged to each other, optionally with a bypass
// relay pair that connects them directly when the forwarder is not healthy.
type Segment struct {
	Name   string   `toml:"name"`
	Ports  []string `toml:"ports"`  // exactly two front-panel port names
	Bypass string   `toml:"bypass"` // bypass pair name in the profile; "": the pair joining the ports, if any
	// MTU of both ports: the longest frame the segment forwards is MTU +
	// 18 bytes (Ethernet header and one VLAN tag, FCS not counted). 0
	// means DefaultMTU.
	MTU int `toml:"mtu"`
}

// DefaultMTU lets a segment carry what a cable carries between ordinary
// neighbours: a 1500-byte packet under two VLAN tags (QinQ, 1522 bytes) and
// a few MPLS labels more, up to 1540 bytes.
const DefaultMTU = 1522

// MTU limits of a segment: a wire carries at least what Ethernet carries,
// and 9216 is the largest jumbo MTU common NICs take.
const (
	MinMTU = 1500
	MaxMTU = 9216
)

// Syslog configures remote logging, which keeps log writes off the flash:
// the events and every daemon's log lines go there.
type Syslog struct {
	Target string `toml:"target"` // "udp://host:port", "tcp://host:port" or "tls://host:port"; "" = off
	// CA is the PEM of the certificates that sign a tls:// collector's
	// certificate, which must name the target's host.
	CA string `toml:"ca"`
}

// SelfTest configures the RFC 2544 self-test the appliance runs on itself:
// which spare (test) ports are cabled to which segment ports. A trial sends
// from the test port cabled to a segment's first port, through the
// forwarder, to the test port cabled to its second port.
type SelfTest struct {
	Ports    []TestCable `toml:"ports"`     // the cabling; none = no self-test
	Sizes    []int       `toml:"sizes"`     // frame sizes in bytes, FCS included
	Trial    Duration    `toml:"trial"`     // length of one throughput trial
	LineRate string      `toml:"line_rate"` // nominal rate of the ports: "100M", "1G", "2.5G", "10G"
	// Expect is the throughput each size must reach on every segment
	// and direction for the self-test to pass, by size ("64") or for
	// every other size ("*"): a share of line rate ("95%") or a frame
	// rate ("1.2Mpps"). 95 % of line rate where nothing is said.
	Expect map[string]string `toml:"expect"`
	// LatencyTrials is how many trials at the throughput rate the latency
	// of each size is averaged over (RFC 2544 §26.2: at least 20).
	LatencyTrials int `toml:"latency_trials"`
	// Directions is 1 (each segment's first port to its second) or 2
	// (both ways at once, the same rate each way, as a segment carries
	// traffic in the field).
	Directions int `toml:"directions"`
}

// TestCable is one cable from a test port to a segment port.
type TestCable struct {
	Test        string `toml:"test"`         // front-panel name of the test port
	SegmentPort string `toml:"segment_port"` // front-panel name of the segment port
}

// defaultFile is the name the default configuration reports in messages.
const defaultFile = "ncpos.toml"

//go:embed default.toml
var defaultTOML []byte

// DefaultTOML returns the embedded default ncpos.toml, a commented example of
// the whole schema that `ncpos build` uses when given no configuration.
func DefaultTOML() []byte {
	return bytes.Clone(defaultTOML)
}

// Default returns a fresh copy of the embedded default configuration. It
// panics if the embedded file is invalid, which the package tests rule out.
func Default() *Config {
	c, err := Parse(defaultFile, defaultTOML)
	if err != nil {
		panic(fmt.Sprintf("config: embedded default is invalid: %v", err))
	}
	return c
}

// Load reads and parses the configuration file at path, on the box that
// will run it: besides Parse's checks, what must fit in this machine's
// memory (the flow table) is checked against it. Messages name the path as
// given.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return ParseOnBox(path, data)
}

// ParseOnBox is Parse with the checks Load makes of the machine it runs
// on (what must fit in its memory): how the box checks a configuration
// it is sent.
func ParseOnBox(filename string, data []byte) (*Config, error) {
	mem, _, _ := sysinfo.Memory("/proc/meminfo") // 0 when unknown: only the hard limit applies
	cpus, _ := sysinfo.CPUs("/", "possible")
	return parse(&source{file: filename, data: data, mem: mem, cpus: len(cpus)})
}

// Parse decodes and validates a configuration. filename is only used in
// messages. Omitted fields get their defaults. On failure the error is a
// *ValidationError listing every problem found, and no Config is returned,
// so an invalid file can never take effect.
func Parse(filename string, data []byte) (*Config, error) {
	return parse(&source{file: filename, data: data})
}

func parse(src *source) (*Config, error) {
	c := defaults()
	doc, errs, pruned, decoded := src.decodeAll(c)
	if !decoded {
		return nil, &ValidationError{Errors: errs}
	}
	c.fillDependentDefaults(doc)
	for _, e := range c.validate(src) {
		if !slices.ContainsFunc(pruned, func(p string) bool { return within(e.Field, p) }) {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		sortByLine(errs)
		return nil, &ValidationError{Errors: errs}
	}
	return c, nil
}

// Validate checks a Config built in memory (no line numbers are available)
// and, if it is valid, makes Profile available.
func (c *Config) Validate() error {
	return asError(c.validate(&source{}))
}

// Profile returns the platform profile the configuration was validated
// against, or looks it up by name for a Config that was not validated; nil if
// there is no such platform.
func (c *Config) Profile() *Profile {
	if c.profile != nil {
		return c.profile
	}
	p, err := LookupProfile(c.Platform)
	if err != nil {
		return nil
	}
	return p
}

// TOML encodes the configuration with every field spelled out, for writing a
// configuration back (e.g. to /perm). It loses default.toml's comments.
// Durations are written by their MarshalTOML, as default.toml spells them.
func (c *Config) TOML() ([]byte, error) {
	var b bytes.Buffer
	enc := toml.NewEncoder(&b).EnableMarshalerInterface()
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("config: encode: %w", err)
	}
	return b.Bytes(), nil
}
