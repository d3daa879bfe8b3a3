package forwarder

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/ncpos/ncpos/config"
)

// Segment is a pair of ports bridged to each other: what enters one leaves
// the other, unmodified.
type Segment struct {
	Name string
	// Interfaces are the kernel interface names of the two ports.
	Interfaces [2]string
	// Labels are the front-panel names (LAN1, ...); the interface names
	// when the segment was given by interface.
	Labels [2]string
	// MTU of both ports; 0 is config.DefaultMTU.
	MTU int
}

var segmentFlagRE = regexp.MustCompile(`^([a-z0-9-]{1,15})=([^,=\s]{1,15}),([^,=\s]{1,15})$`)

// ParseSegmentFlag parses "name=ifA,ifB", the form forwarderd's -segment
// flag takes so that it can run without a configuration file (the lab).
func ParseSegmentFlag(s string) (Segment, error) {
	m := segmentFlagRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return Segment{}, fmt.Errorf("segment %q: want name=ifA,ifB (name: 1-15 of a-z, 0-9, \"-\")", s)
	}
	if m[2] == m[3] {
		return Segment{}, fmt.Errorf("segment %q: both ports are %s, want two interfaces", s, m[2])
	}
	return Segment{Name: m[1], Interfaces: [2]string{m[2], m[3]}, Labels: [2]string{m[2], m[3]}}, nil
}

// AbsentSegment is a configured segment the box cannot bridge because the
// profile's port is not there (a NIC module removed, a wrong PCI address).
type AbsentSegment struct {
	Name    string
	Labels  [2]string
	Missing []string // front-panel names not found
	Why     string   // what the profile's resolution said
}

// SegmentsFromConfig maps the configuration's segments to kernel interfaces
// through the platform profile, looking at sysClassNet (config.SysClassNet on
// the appliance). A segment whose ports are not both found is returned in
// absent, never bridged by half; the others still are, so that one missing
// NIC module does not stop the segments that are cabled.
func SegmentsFromConfig(cfg *config.Config, sysClassNet string) (segs []Segment, absent []AbsentSegment, err error) {
	prof := cfg.Profile()
	if prof == nil {
		return nil, nil, fmt.Errorf("forwarder: unknown platform %q", cfg.Platform)
	}
	ports, resolveErr := prof.Resolve(sysClassNet)
	why := "not found"
	if resolveErr != nil {
		why = resolveErr.Error()
	}
	return SegmentsOnPorts(cfg, ports, why)
}

// SegmentsOnPorts maps the configuration's segments to kernel interfaces
// through ports (front-panel name to interface); a port it lacks makes its
// segment absent, for the reason why.
func SegmentsOnPorts(cfg *config.Config, ports map[string]string, why string) (segs []Segment, absent []AbsentSegment, err error) {
	for _, s := range cfg.Segments {
		if len(s.Ports) != 2 {
			return nil, nil, fmt.Errorf("forwarder: segment %q has %d ports, want 2", s.Name, len(s.Ports))
		}
		seg := Segment{Name: s.Name, Labels: [2]string{s.Ports[0], s.Ports[1]}, MTU: s.MTU}
		var missing []string
		for i, label := range s.Ports {
			seg.Interfaces[i] = ports[label]
			if seg.Interfaces[i] == "" {
				missing = append(missing, label)
			}
		}
		if len(missing) > 0 {
			absent = append(absent, AbsentSegment{Name: s.Name, Labels: seg.Labels, Missing: missing, Why: why})
			continue
		}
		segs = append(segs, seg)
	}
	return segs, absent, nil
}

// ParsePortsFlag parses "LAN1=ifA,LAN2=ifB,...": front-panel names given
// kernel interfaces, as forwarderd's -ports flag takes them where the
// platform profile cannot find the ports (the lab's veths).
func ParsePortsFlag(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		label, ifname, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || label == "" || ifname == "" {
			return nil, fmt.Errorf("ports %q: %q is not LABEL=interface", s, kv)
		}
		if _, dup := out[label]; dup {
			return nil, fmt.Errorf("ports %q: %s given twice", s, label)
		}
		out[label] = ifname
	}
	return out, nil
}

// checkSegments rejects what the datapath cannot do: no segments, a port in
// two segments, more ports than the BPF maps hold.
func checkSegments(segs []Segment) error {
	if len(segs) == 0 {
		return fmt.Errorf("forwarder: no segments to bridge")
	}
	seen := map[string]string{}
	names := map[string]bool{}
	for _, s := range segs {
		if names[s.Name] {
			return fmt.Errorf("forwarder: segment name %q used twice", s.Name)
		}
		names[s.Name] = true
		if s.Interfaces[0] == s.Interfaces[1] {
			return fmt.Errorf("forwarder: segment %s: both ports are %s", s.Name, s.Interfaces[0])
		}
		for _, ifname := range s.Interfaces {
			if ifname == "" {
				return fmt.Errorf("forwarder: segment %s: empty interface name", s.Name)
			}
			if other, ok := seen[ifname]; ok {
				return fmt.Errorf("forwarder: interface %s is in segments %s and %s, want one", ifname, other, s.Name)
			}
			seen[ifname] = s.Name
		}
	}
	if len(seen) > maxPorts {
		return fmt.Errorf("forwarder: %d ports, at most %d are supported", len(seen), maxPorts)
	}
	return nil
}

// maxPorts is MAX_PORTS in bpf/port.c.
const maxPorts = 64
