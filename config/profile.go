package config

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Profile describes one hardware platform: which front-panel port is which
// Linux interface, and which port pairs have bypass relays. Profiles are
// compiled in, so a configuration names its box by one word.
type Profile struct {
	Name        string       `toml:"name"`
	Description string       `toml:"description"`
	Ports       []Port       `toml:"port"`
	BypassPairs []BypassPair `toml:"bypass_pair"`
	// BypassBudget is bypass.budget's default on this platform, where
	// the default does not fit (a machine in software emulation).
	BypassBudget Duration `toml:"bypass_budget"`
}

// Port is one front-panel Ethernet port.
type Port struct {
	Name string `toml:"name"` // label on the front panel, e.g. "LAN1"
	// PCI is the PCI address ("0000:00:04.0"), the stable way to find the
	// interface: kernel names depend on probe order.
	PCI string `toml:"pci"`
	// PCIID and Nth find the port by what it is when its address depends
	// on the box's assembly (NIC modules in bays): the Nth (from 0)
	// network function with vendor:device PCIID ("8086:10fb"), in PCI
	// address order. Used when PCI is empty or not found.
	PCIID string `toml:"pci_id"`
	Nth   int    `toml:"nth"`
	// Ifname is the kernel interface name, used when neither finds the
	// port (generic boxes where the layout is unknown).
	Ifname     string `toml:"ifname"`
	Management bool   `toml:"management"` // the default management port
}

// BypassPair is two ports joined by a bypass relay.
type BypassPair struct {
	Name    string   `toml:"name"`
	Ports   []string `toml:"ports"`   // exactly two port names
	Backend string   `toml:"backend"` // relay driver, one of bypassBackends

	// RegisterMap says where the backend's register map (or command set)
	// comes from: "vendor" (published), "operator" (filled in on site) or
	// "missing" (not public: the pair cannot be driven until it is filled
	// in). Only for hardware backends.
	RegisterMap string `toml:"register_map"`
	// Notes is free text for the operator: where the map comes from, what
	// to check on the box.
	Notes string `toml:"notes"`
	// Defaults the hardware applies by itself, set by bypassd at start
	// where the hardware lets software choose them: the state on power
	// loss, when the OS shuts down with standby power on, when power comes
	// back, from power-on until software sets one, and when the
	// controller's own timer expires. "" leaves the hardware's choice.
	PowerOff     string `toml:"power_off"`
	OSOff        string `toml:"os_off"`        // OS shut down, standby power on
	PowerRestore string `toml:"power_restore"` // power back, before the box boots
	PowerUp      string `toml:"power_up"`
	TimerExpiry  string `toml:"timer_expiry"`
	// Timer is the controller watchdog timeout bypassd arms and keeps
	// kicking: if bypassd dies or hangs, the relay falls to timer_expiry
	// on its own. 0 leaves the timer off.
	Timer Duration `toml:"timer"`

	// One backend section, named like the backend (registers goes with
	// superio, smbus and ioport).
	Registers RegisterMap `toml:"registers"`
	SuperIO   SuperIO     `toml:"superio"`
	SMBus     SMBus       `toml:"smbus"`
	IOPort    IOPort      `toml:"ioport"`
	Sysfs     Sysfs       `toml:"sysfs"`
	Bpctl     Bpctl       `toml:"bpctl"`
	Exec      Exec        `toml:"exec"`
	Sim       Sim         `toml:"sim"`
	Lanner    Lanner      `toml:"lanner"`
}

// bypassBackends are the relay drivers a profile may name.
var bypassBackends = []string{"sim", "none", "superio", "smbus", "ioport", "sysfs", "bpctl", "exec", "lanner", "ixgbe"}

//go:embed profiles/*.toml
var profileFS embed.FS

// ProfileNames lists the compiled-in platform profiles, sorted.
func ProfileNames() []string {
	entries, _ := fs.ReadDir(profileFS, "profiles")
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".toml"); ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// LookupProfile parses and validates the compiled-in profile name. Each call
// returns a fresh copy that the caller may modify.
func LookupProfile(name string) (*Profile, error) {
	if !slices.Contains(ProfileNames(), name) {
		return nil, fmt.Errorf("config: unknown platform %q, want one of %s", name, strings.Join(ProfileNames(), ", "))
	}
	file := path.Join("profiles", name+".toml")
	data, err := profileFS.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("config: platform %q: %w", name, err)
	}
	p, err := ParseProfile(file, data)
	if err != nil {
		return nil, err
	}
	if p.Name != name {
		return nil, &ValidationError{Errors: []FieldError{(&source{file: file, data: data}).fieldError("name",
			"%q does not match the file name, want %q", p.Name, name)}}
	}
	return p, nil
}

// ParseProfile decodes and validates a profile; filename is used in messages.
func ParseProfile(filename string, data []byte) (*Profile, error) {
	p, err := DecodeProfile(filename, data)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Port returns the port with the given front-panel name, or nil.
func (p *Profile) Port(name string) *Port {
	for i := range p.Ports {
		if p.Ports[i].Name == name {
			return &p.Ports[i]
		}
	}
	return nil
}

// ManagementPort returns the port marked management, or nil.
func (p *Profile) ManagementPort() *Port {
	for i := range p.Ports {
		if p.Ports[i].Management {
			return &p.Ports[i]
		}
	}
	return nil
}

// BypassPair returns the bypass pair with the given name, or nil.
func (p *Profile) BypassPair(name string) *BypassPair {
	for i := range p.BypassPairs {
		if p.BypassPairs[i].Name == name {
			return &p.BypassPairs[i]
		}
	}
	return nil
}

// PortNames lists the front-panel names in profile order.
func (p *Profile) PortNames() []string {
	names := make([]string, len(p.Ports))
	for i, port := range p.Ports {
		names[i] = port.Name
	}
	return names
}

var (
	profileNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)
	portNameRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,15}$`)
	// pciRE is a PCI address as sysfs spells it: domain:bus:device.function.
	pciRE = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[01][0-9a-f]\.[0-7]$`)
	// pciIDRE is vendor:device.
	pciIDRE = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{4}$`)
)

// validate checks the profile's internal consistency.
func (p *Profile) validate(src *source) []FieldError {
	var errs []FieldError
	add := func(path, format string, args ...any) {
		errs = append(errs, src.fieldError(path, format, args...))
	}

	if !profileNameRE.MatchString(p.Name) {
		add("name", "%q is not a valid profile name, want 1-32 of a-z, 0-9 and \"-\"", p.Name)
	}
	if len(p.Ports) == 0 {
		add("port", "no ports, want at least one [[port]]")
	}

	portNames := &tableNames{kind: "port", table: "port", valid: portNameRE, want: `1-16 letters, digits, "_", "." or "-"`}
	seenPCI := map[string]int{}
	seenIf := map[string]int{}
	var mgmt []int
	for i, port := range p.Ports {
		f := indexPath("port", i)
		portNames.check(add, f, i, port.Name)
		if port.PCI == "" && port.PCIID == "" && port.Ifname == "" {
			add(f, "port %q has neither pci, pci_id nor ifname, want at least one", port.Name)
		}
		switch key := fmt.Sprintf("%s#%d", port.PCIID, port.Nth); {
		case port.PCIID != "" && !pciIDRE.MatchString(port.PCIID):
			add(f+".pci_id", "%q is not a PCI ID, want vendor:device in lower-case hex such as \"8086:10fb\"", port.PCIID)
		case port.Nth < 0 || port.Nth > 63:
			add(f+".nth", "%d is out of range, want 0..63", port.Nth)
		case port.Nth != 0 && port.PCIID == "":
			add(f+".nth", "is set without pci_id, want pci_id too")
		case port.PCIID != "":
			if j, dup := seenPCI[key]; dup {
				add(f+".pci_id", "function %d of %s is already port[%d]", port.Nth, port.PCIID, j)
			} else {
				seenPCI[key] = i
			}
		}
		if port.PCI != "" {
			switch j, dup := seenPCI[port.PCI]; {
			case !pciRE.MatchString(port.PCI):
				add(f+".pci", "%q is not a PCI address, want domain:bus:device.function in lower-case hex such as \"0000:00:04.0\"", port.PCI)
			case dup:
				add(f+".pci", "PCI address %s is already used by port[%d]", port.PCI, j)
			default:
				seenPCI[port.PCI] = i
			}
		}
		if port.Ifname != "" {
			switch j, dup := seenIf[port.Ifname]; {
			case !validIfname(port.Ifname):
				add(f+".ifname", "%q is not a valid interface name, want 1-15 characters without \"/\", \":\" or spaces", port.Ifname)
			case dup:
				add(f+".ifname", "interface %s is already used by port[%d]", port.Ifname, j)
			default:
				seenIf[port.Ifname] = i
			}
		}
		if port.Management {
			mgmt = append(mgmt, i)
		}
	}
	switch {
	case len(mgmt) == 0 && len(p.Ports) > 0:
		add("port", "no port has management = true, want exactly one")
	case len(mgmt) > 1:
		add(indexPath("port", mgmt[1])+".management", "port %q is a second management port (port[%d] is one), want exactly one",
			p.Ports[mgmt[1]].Name, mgmt[0])
	}

	pairNames := segmentNames("bypass pair", "bypass_pair")
	inPair := map[string]string{}
	for i, bp := range p.BypassPairs {
		f := indexPath("bypass_pair", i)
		pairNames.check(add, f, i, bp.Name)
		if len(bp.Ports) != 2 {
			add(f+".ports", "has %d ports, want exactly two", len(bp.Ports))
		}
		for k, name := range bp.Ports {
			pf := indexPath(f+".ports", k)
			port := p.Port(name)
			switch {
			case port == nil:
				add(pf, "unknown port %q (profile %q has %s)", name, p.Name, strings.Join(p.PortNames(), ", "))
			case port.Management:
				add(pf, "%q is the management port, want a data port", name)
			case k == 1 && len(bp.Ports) > 1 && bp.Ports[0] == name:
				add(pf, "port %q is listed twice, want two distinct ports", name)
			case inPair[name] != "":
				add(pf, "port %q is already in bypass pair %q", name, inPair[name])
			default:
				inPair[name] = bp.Name
			}
		}
		if !slices.Contains(bypassBackends, bp.Backend) {
			add(f+".backend", "unknown backend %q, want one of %s", bp.Backend, quoteList(bypassBackends))
		}
		validateBypassPair(add, f, &p.BypassPairs[i])
	}
	return errs
}

// validIfname mirrors the kernel's dev_valid_name.
func validIfname(s string) bool {
	if s == "" || len(s) > 15 || s == "." || s == ".." {
		return false
	}
	return !strings.ContainsAny(s, "/: \t\n")
}

// quoteList formats names as "a", "b" or "c" for messages.
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	switch len(q) {
	case 0:
		return "nothing"
	case 1:
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
