package config

import (
	"crypto/x509"
	"fmt"
	"net/netip"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ncpos/ncpos/passwd"
)

var (
	// hostnameRE is one RFC 1123 label: the appliance announces itself by it.
	hostnameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)
	// segmentNameRE keeps segment names usable in interface and BPF map names.
	segmentNameRE = regexp.MustCompile(`^[a-z0-9-]{1,15}$`)
)

var (
	engines  = []string{"xdp", "afxdp"}
	modes    = []string{"forward", "service"}
	xdpModes = []string{"auto", "native", "generic"}
)

// Limits checked by validation.
const (
	minWatchdogTimeout = 1 * time.Second
	maxWatchdogTimeout = 3600 * time.Second
	maxBootGrace       = 3600 * time.Second
	minFlowTableSize   = 1024
	maxFlowTableSize   = 1 << 31 // beyond it the kernel's hash map sizing overflows
	// flowEntryBytes is what one flow table entry costs the kernel: a
	// 40-byte key in an LRU hash element with its list and hash nodes and
	// the pointer to its per-CPU values, rounded up; and flowCPUBytes,
	// each possible CPU's 48-byte share of the flow.
	flowEntryBytes = 144
	flowCPUBytes   = 48
	// flowMemShare is the share of the box's memory the flow table may
	// take (service mode only: forward mode keeps no flows): the rest is
	// the kernel's, the daemons' and the page cache's.
	flowMemShare = 4
)

// validate checks every rule and returns all violations. On success it
// records the profile for Profile.
func (c *Config) validate(src *source) []FieldError {
	c.profile = nil
	var errs []FieldError
	add := func(path, format string, args ...any) {
		errs = append(errs, src.fieldError(path, format, args...))
	}

	if !hostnameRE.MatchString(c.Hostname) {
		add("hostname", "%q is not a valid hostname, want 1-63 letters, digits and \"-\", not starting or ending with \"-\"", c.Hostname)
	}

	var prof *Profile
	if !slices.Contains(ProfileNames(), c.Platform) {
		add("platform", "unknown platform %q, want one of %s", c.Platform, quoteList(ProfileNames()))
	} else if p, err := LookupProfile(c.Platform); err != nil {
		// A broken compiled-in profile, which the package tests rule out.
		add("platform", "the compiled-in profile %q is invalid: %s", c.Platform, strings.ReplaceAll(err.Error(), "\n", "; "))
	} else {
		prof = p
	}

	c.validateServices(add)
	c.validateManagement(add, prof)
	c.validateStatus(add)
	c.validateWatchdog(add)
	c.validateForwarder(add, src.mem, src.cpus)
	c.validateBypass(add)
	c.validateSegments(add, prof)
	c.validateSyslog(add)
	c.validateSNMP(add)
	c.validateAuth(add)
	c.validateTime(add)
	c.validateSelfTest(add, prof)

	if len(errs) == 0 {
		c.profile = prof
	}
	return errs
}

// addFunc records one violation at a field path.
type addFunc func(path, format string, args ...any)

func (c *Config) validateServices(add addFunc) {
	seen := map[string]int{}
	for i, s := range c.Services {
		f := indexPath("services", i)
		if j, dup := seen[s]; dup {
			add(f, "duplicate service %q, already listed as services[%d]", s, j)
			continue
		}
		seen[s] = i
		if !slices.Contains(serviceNames, s) {
			add(f, "unknown service %q, want one of %s", s, quoteList(serviceNames))
		}
	}
}

func (c *Config) validateManagement(add addFunc, prof *Profile) {
	m := c.Management
	if prof != nil && prof.Port(m.Port) == nil {
		add("management.port", "unknown port %q %s", m.Port, portsHint(prof))
	}
	var prefix netip.Prefix
	switch {
	case m.DHCP && m.Address != "":
		add("management.address", "%q is set but dhcp = true, want dhcp = false for a static address or no address", m.Address)
	case !m.DHCP && m.Address == "":
		add("management.address", "missing, want a static address such as \"192.0.2.10/24\" when dhcp = false")
	case m.Address != "":
		p, err := netip.ParsePrefix(m.Address)
		switch {
		case err != nil:
			add("management.address", "%q is not an address in CIDR form, want e.g. \"192.0.2.10/24\"", m.Address)
		case !p.Addr().Is4():
			add("management.address", "%q is not an IPv4 address, want e.g. \"192.0.2.10/24\" (an IPv6 address goes in address6, with ipv6 = \"static\")", m.Address)
		case p.Addr().Zone() != "" || p.Addr().IsUnspecified() || p.Addr().IsMulticast():
			add("management.address", "%q is not a usable host address, want e.g. \"192.0.2.10/24\"", m.Address)
		default:
			prefix = p
		}
	}
	c.validateIPv6(add)
	c.validateDNS(add)
	if m.Gateway == "" {
		return
	}
	gw, err := netip.ParseAddr(m.Gateway)
	switch {
	case m.Address == "":
		add("management.gateway", "%q is set without a static address, want address (with dhcp = false) or no gateway", m.Gateway)
	case err != nil:
		add("management.gateway", "%q is not an IP address, want e.g. \"192.0.2.1\"", m.Gateway)
	case prefix.IsValid() && !prefix.Masked().Contains(gw):
		add("management.gateway", "%s is outside %s, want an address on the management subnet", gw, m.Address)
	case prefix.IsValid() && gw == prefix.Addr():
		add("management.gateway", "%s is the appliance's own address, want the router's address", gw)
	}
}

func (c *Config) validateStatus(add addFunc) {
	if p := c.Status.Port; p < 1 || p > 65535 {
		add("status.port", "%d is out of range, want 1..65535", p)
	}
	switch p := c.Status.HTTPPort; {
	case p < 0 || p > 65535:
		add("status.http_port", "%d is out of range, want 1..65535, or 0 for no plain HTTP redirect", p)
	case p != 0 && p == c.Status.Port:
		add("status.http_port", "%d is status.port too, want another port (or 0) for the redirect to HTTPS", p)
	}
	if pw := c.Status.Password; pw != "" {
		if err := passwd.Strength(pw); err != nil {
			add("status.password", "%v", err)
		}
		if c.Status.PasswordHash != "" {
			add("status.password", "is set together with status.password_hash, want only one")
		}
	}
	if h := c.Status.PasswordHash; h != "" {
		if err := passwd.CheckHash([]byte(h)); err != nil {
			add("status.password_hash", "%v", err)
		}
	}
	for i, n := range c.Status.Names {
		key := fmt.Sprintf("status.names[%d]", i)
		if _, err := netip.ParseAddr(n); err == nil {
			continue
		}
		labels := strings.Split(strings.TrimSuffix(n, "."), ".")
		ok := len(n) <= 253
		for _, l := range labels {
			ok = ok && hostnameRE.MatchString(l)
		}
		if !ok {
			add(key, "%q is neither a DNS name nor an IP address, want e.g. \"fw1.campus.example\" or \"198.51.100.7\"", n)
		}
	}
}

func (c *Config) validateBypass(add addFunc) {
	if b := c.Bypass.Budget; b.Duration < 6*time.Millisecond || b.Duration > time.Minute {
		add("bypass.budget", "%q is out of range, want between 6ms and 1m", b)
	}
	if h := c.Bypass.HoldDown; h.Duration < 0 || h.Duration > time.Hour {
		add("bypass.hold_down", "%q is out of range, want between 0s and 1h", h)
	}
	if h := c.Bypass.StartHoldDown; h.Duration <= 0 || h.Duration > time.Hour {
		add("bypass.start_hold_down", "%q is out of range, want more than 0s and at most 1h", h)
	}
}

func (c *Config) validateWatchdog(add addFunc) {
	w := c.Watchdog
	if d := w.Device; path.Clean(d) != d || !strings.HasPrefix(d, "/dev/") {
		add("watchdog.device", "%q is not an absolute path under /dev, want e.g. \"/dev/watchdog\"", d)
	}
	timeoutOK := false
	switch t := w.Timeout; {
	case t.Duration < minWatchdogTimeout:
		add("watchdog.timeout", "%q is too short, want between 1s and 3600s", t)
	case t.Duration > maxWatchdogTimeout:
		add("watchdog.timeout", "%q is too long, want between 1s and 3600s", t)
	case t.Duration%time.Second != 0:
		add("watchdog.timeout", "%q is not a whole number of seconds (the hardware counts seconds), want e.g. \"30s\"", t)
	default:
		timeoutOK = true
	}
	switch i := w.Interval; {
	case i.Duration <= 0:
		add("watchdog.interval", "%q is not positive, want e.g. \"5s\" (less than half the timeout)", i)
	case timeoutOK && i.Duration >= w.Timeout.Duration/2:
		add("watchdog.interval", "%q is too long for timeout %q, want less than %s (half the timeout)",
			i, w.Timeout, Duration{w.Timeout.Duration / 2})
	}
	if g := w.BootGrace; g.Duration < 0 || g.Duration > maxBootGrace {
		add("watchdog.boot_grace", "%q is out of range, want between 0s and 3600s", g)
	}
}

func (c *Config) validateForwarder(add addFunc, mem uint64, cpus int) {
	f := c.Forwarder
	if !slices.Contains(engines, f.Engine) {
		add("forwarder.engine", "unknown engine %q, want %s", f.Engine, quoteList(engines))
	}
	if !slices.Contains(modes, f.Mode) {
		add("forwarder.mode", "unknown mode %q, want %s", f.Mode, quoteList(modes))
	}
	if !slices.Contains(xdpModes, f.XDPMode) {
		add("forwarder.xdp_mode", "unknown XDP mode %q, want %s", f.XDPMode, quoteList(xdpModes))
	}
	if f.Cores < 0 {
		add("forwarder.cores", "%d is negative, want 0 (all cores but one) or a count of cores", f.Cores)
	}
	if f.FlowTableSize < minFlowTableSize || f.FlowTableSize > maxFlowTableSize {
		add("forwarder.flow_table_size", "%d is out of range, want between %d and %d", f.FlowTableSize, minFlowTableSize, uint64(maxFlowTableSize))
	} else if per := flowBytes(cpus); f.Mode == "service" && mem > 0 && uint64(f.FlowTableSize)*per > mem/flowMemShare {
		shares := fmt.Sprintf("the shares of its %d possible CPUs included", cpus)
		switch {
		case cpus == 1:
			shares = "its one CPU's share included"
		case cpus <= 0:
			shares = "one CPU's share counted, the CPU count unknown"
		}
		add("forwarder.flow_table_size", "%d entries need about %d MiB (%d bytes each, %s), more than a quarter of this box's %d MiB of memory; want at most %d",
			f.FlowTableSize, uint64(f.FlowTableSize)*per>>20, per, shares, mem>>20, mem/flowMemShare/per)
	}
}

// flowBytes is what one flow table entry costs on a box with cpus possible
// CPUs (at least one).
func flowBytes(cpus int) uint64 {
	return flowEntryBytes + flowCPUBytes*uint64(max(cpus, 1))
}

// AFXDPMaxMTU is the largest MTU the afxdp engine forwards: its frames are
// 2048-byte chunks of which the kernel keeps 256 bytes of headroom, so a
// frame is at most 1792 bytes, MTU + FrameOverhead.
const AFXDPMaxMTU = 2048 - 256 - FrameOverhead

// FrameOverhead is what a frame carries beyond the MTU and the kernel
// still forwards: the Ethernet header and one VLAN tag (FCS not counted).
const FrameOverhead = 14 + 4

func (c *Config) validateSegments(add addFunc, prof *Profile) {
	if len(c.Segments) == 0 && slices.Contains(c.Services, "forwarderd") {
		add("segment", "no segments, want at least one [[segment]] with two ports for forwarderd to bridge")
	}
	segNames := segmentNames("segment", "segment")
	inSegment := map[string]string{} // port -> segment name
	for i, s := range c.Segments {
		f := indexPath("segment", i)
		segNames.check(add, f, i, s.Name)

		if len(s.Ports) != 2 {
			add(f+".ports", "has %d ports, want exactly two", len(s.Ports))
		}
		// portsOK: two usable ports, so comparing with a bypass pair makes sense.
		portsOK := len(s.Ports) == 2
		for k, port := range s.Ports {
			pf := indexPath(f+".ports", k)
			switch {
			case prof != nil && prof.Port(port) == nil:
				add(pf, "unknown port %q %s", port, portsHint(prof))
				portsOK = false
			case port == c.Management.Port:
				add(pf, "%q is the management port, want a data port", port)
				portsOK = false
			case slices.Index(s.Ports, port) < k:
				add(pf, "port %q is listed twice, want two distinct ports", port)
				portsOK = false
			case inSegment[port] != "":
				add(pf, "port %q is already in segment %q, want each port in at most one segment", port, inSegment[port])
			default:
				inSegment[port] = segmentLabel(s.Name, i)
			}
		}

		if s.MTU < MinMTU || s.MTU > MaxMTU {
			add(f+".mtu", "%d is out of range, want between %d and %d (0 for the default, %d)", s.MTU, MinMTU, MaxMTU, DefaultMTU)
		} else if c.Forwarder.Engine == "afxdp" && s.MTU > AFXDPMaxMTU {
			add(f+".mtu", "%d is more than the afxdp engine forwards (frames of up to %d bytes, MTU %d); want engine \"xdp\" for jumbo frames", s.MTU, AFXDPMaxMTU+FrameOverhead, AFXDPMaxMTU)
		}
		if s.Bypass == "" || prof == nil {
			continue
		}
		bp := prof.BypassPair(s.Bypass)
		switch {
		case bp == nil:
			add(f+".bypass", "unknown bypass pair %q %s", s.Bypass, pairsHint(prof))
		case portsOK && !samePorts(bp.Ports, s.Ports):
			add(f+".bypass", "bypass pair %q joins %s, want a pair joining the segment's ports %s",
				bp.Name, strings.Join(bp.Ports, " and "), strings.Join(s.Ports, " and "))
		}
	}
}

func segmentLabel(name string, i int) string {
	if name == "" {
		return indexPath("segment", i)
	}
	return name
}

func samePorts(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func portsHint(p *Profile) string {
	return fmt.Sprintf("(platform %q has %s)", p.Name, strings.Join(p.PortNames(), ", "))
}

func pairsHint(p *Profile) string {
	if len(p.BypassPairs) == 0 {
		return fmt.Sprintf("(platform %q has no bypass pairs), want \"\"", p.Name)
	}
	names := make([]string, len(p.BypassPairs))
	for i, bp := range p.BypassPairs {
		names[i] = bp.Name
	}
	return fmt.Sprintf("(platform %q has %s)", p.Name, strings.Join(names, ", "))
}

func (c *Config) validateSyslog(add addFunc) {
	t := c.Syslog.Target
	if t == "" {
		if c.Syslog.CA != "" {
			add("syslog.ca", "set without a tls:// target")
		}
		return
	}
	const want = `want "udp://host:514", "tcp://host:514" or "tls://host:6514", or "" for no remote syslog`
	u, err := url.Parse(t)
	if err != nil || (u.Scheme != "udp" && u.Scheme != "tcp" && u.Scheme != "tls") || u.Opaque != "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Hostname() == "" {
		add("syslog.target", "%q is not a syslog target, %s", t, want)
		return
	}
	if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
		add("syslog.target", "%q has no valid port, %s", t, want)
	}
	switch {
	case u.Scheme != "tls" && c.Syslog.CA != "":
		add("syslog.ca", "set for a %s:// target, which does not use TLS", u.Scheme)
	case u.Scheme == "tls" && c.Syslog.CA == "":
		add("syslog.ca", "a tls:// target needs the PEM of the CA that signs the collector's certificate")
	case u.Scheme == "tls" && !x509.NewCertPool().AppendCertsFromPEM([]byte(c.Syslog.CA)):
		add("syslog.ca", "holds no PEM certificate")
	}
}
