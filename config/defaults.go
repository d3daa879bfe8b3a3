package config

import (
	"time"
)

// serviceNames are the appliance daemons init can supervise, in start
// order: the one list of them (statusd reports on these, the image builder
// compiles those a configuration names).
var serviceNames = []string{"forwarderd", "bypassd", "watchdogd", "statusd"}

// defaultServices are the daemons a default appliance runs: all of them.
var defaultServices = serviceNames

// defaultSelfTestSizes are the Ethernet frame sizes of RFC 2544 §9.1.
var defaultSelfTestSizes = []int{64, 128, 256, 512, 1024, 1280, 1518}

// ServiceNames returns the names allowed in services, in start order.
func ServiceNames() []string {
	return append([]string(nil), serviceNames...)
}

// defaults returns a Config holding the value of every field a file may
// omit. Parse decodes over it, so omitted keys keep these values. Segments
// have no default: which ports to bridge is the one thing a file must say.
func defaults() *Config {
	return &Config{
		Hostname: "ncpos",
		Platform: "qemu",
		Services: append([]string(nil), defaultServices...),
		Management: Management{
			Port: "", // the profile's management port, see fillDependentDefaults
			DHCP: true,
			IPv6: IPv6Slaac,
			DNS:  []string{},
		},
		Status: Status{Port: 443, HTTPPort: 80, AuthRead: true, Names: []string{}},
		SNMP:   SNMP{Port: 161, Users: []SNMPUser{}, Traps: []SNMPTrap{}},
		Auth:   defaultAuth(),
		Time:   defaultTime(),
		Watchdog: Watchdog{
			Device:    "/dev/watchdog",
			Timeout:   Seconds(30),
			Interval:  Seconds(5),
			BootGrace: Seconds(120),
		},
		Forwarder: Forwarder{
			Engine:        "xdp",
			Mode:          "forward",
			Cores:         0,
			FlowTableSize: 1000000,
			XDPMode:       "auto",
		},
		Bypass: Bypass{
			Budget:        Duration{300 * time.Millisecond},
			HoldDown:      Seconds(5),
			StartHoldDown: Duration{DefaultStartHoldDown},
		},
		SelfTest: SelfTest{
			Ports:    []TestCable{}, // no cabling: no self-test
			Sizes:    append([]int(nil), defaultSelfTestSizes...),
			Trial:    Seconds(2),
			LineRate: "1G",
			Expect:   map[string]string{anySize: defaultExpect},
			// RFC 2544 §26.2 asks for 20 trials.
			LatencyTrials: 20,
			Directions:    1,
		},
	}
}

// DefaultStartHoldDown is bypass.start_hold_down's default, unless
// bypass.hold_down is shorter.
const DefaultStartHoldDown = time.Second

// fillDependentDefaults sets defaults that depend on other fields:
//   - management.port defaults to the port the profile marks as management
//     ("MGMT" if the platform is unknown, which validation then reports);
//   - a segment's bypass defaults to the profile's pair joining its ports;
//   - bypass.budget defaults to the profile's bypass_budget where it has
//     one;
//   - bypass.start_hold_down defaults to 1s, or bypass.hold_down when
//     that is shorter, so that a short hold-down is not outlasted at
//     power-on;
//   - management.dhcp defaults to false when a static address is given,
//     because asking for both is never what the writer meant;
//   - a segment's mtu left out (or 0) is DefaultMTU.
func (c *Config) fillDependentDefaults(doc document) {
	for i := range c.Segments {
		if c.Segments[i].MTU == 0 {
			c.Segments[i].MTU = DefaultMTU
		}
	}
	if !doc.defines("management", "port") {
		c.Management.Port = "MGMT"
		if p, err := LookupProfile(c.Platform); err == nil {
			if m := p.ManagementPort(); m != nil {
				c.Management.Port = m.Name
			}
		}
	}
	// A segment whose two ports a relay of the profile joins is behind
	// that relay: left out, the relay would stay in bypass, and a relay
	// that cuts the NIC off would keep the segment from ever forwarding.
	if p, err := LookupProfile(c.Platform); err == nil {
		for i := range c.Segments {
			s := &c.Segments[i]
			if s.Bypass != "" || len(s.Ports) != 2 {
				continue
			}
			for _, bp := range p.BypassPairs {
				if samePorts(bp.Ports, s.Ports) {
					s.Bypass = bp.Name
				}
			}
		}
	}
	if !doc.defines("bypass", "budget") {
		if p, err := LookupProfile(c.Platform); err == nil && p.BypassBudget.Duration > 0 {
			c.Bypass.Budget = p.BypassBudget
		}
	}
	if !doc.defines("bypass", "start_hold_down") {
		c.Bypass.StartHoldDown = Duration{DefaultStartHoldDown}
		if h := c.Bypass.HoldDown.Duration; h > 0 && h < DefaultStartHoldDown {
			c.Bypass.StartHoldDown = c.Bypass.HoldDown
		}
	}
	if !doc.defines("management", "dhcp") && c.Management.Address != "" {
		c.Management.DHCP = false
	}
}
