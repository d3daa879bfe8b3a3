package bypass

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
)

// Opener opens the backend of a profile's bypass pair; Open is the real
// one, tests pass emulated devices.
type Opener func(bp config.BypassPair, ifnames [2]string) (Backend, error)

// Open opens the hardware (or the lab relay) of a profile's pair.
func Open(bp config.BypassPair, ifnames [2]string) (Backend, error) {
	switch bp.Backend {
	case "superio":
		cfg := bp.SuperIO.WithDefaults()
		f, err := openPort(cfg.Device)
		if err != nil {
			return nil, err
		}
		b, err := newSuperIO(f, cfg, bp.Registers)
		if err != nil {
			f.Close()
		}
		return b, err
	case "ioport":
		f, err := openPort(bp.IOPort.Device)
		if err != nil {
			return nil, err
		}
		b, err := newIOPort(f, bp.Registers)
		if err != nil {
			f.Close()
		}
		return b, err
	case "smbus":
		d, err := openI2C(bp.SMBus.Bus, bp.SMBus.Address, bp.SMBus.Force)
		if err != nil {
			return nil, err
		}
		b, err := newSMBus(d, bp.SMBus, bp.Registers)
		if err != nil {
			d.Close()
		}
		return b, err
	case "lanner":
		return openLanner(bp.Lanner, "/sys")
	case "ixgbe":
		return openIxgbe(config.SysClassNet, ifnames[0])
	case "sysfs":
		return newSysfs(osFiles{}, bp.Sysfs, ifnames)
	case "bpctl":
		ifi, err := net.InterfaceByName(ifnames[0])
		if err != nil {
			return nil, fmt.Errorf("bpctl: master port: %w", err)
		}
		d, err := openBpctl(bp.Bpctl.Device)
		if err != nil {
			return nil, err
		}
		b, err := newBpctl(d, ifi.Index)
		if err != nil {
			d.Close()
		}
		return b, err
	case "exec":
		return newExec(runCommand, bp.Exec, bp.Name, ifnames)
	case "sim":
		s, err := openSim(bp.Name, ifnames[0], ifnames[1], bp.Sim.TimerUnit.Duration)
		if err == nil {
			s.CutLinks = bp.Sim.CutLinks
		}
		return s, err
	}
	return nil, fmt.Errorf("backend %q: %w", bp.Backend, errUnsupported)
}

// needsInterfaces: backends that address the relay through the ports'
// kernel interfaces rather than a controller address.
func needsInterfaces(backend string) bool {
	switch backend {
	case "sim", "sysfs", "bpctl", "exec", "ixgbe":
		return true
	}
	return false
}

// Setup is what bypassd drives, worked out from the configuration and the
// platform profile.
type Setup struct {
	Pairs    []*Pair
	Source   string // where the profile came from
	Failsafe string // set when the profile was refused
}

// DefaultProfileDir is where an operator puts a platform profile with a
// filled-in register map: <dir>/<platform>.toml replaces the compiled-in
// profile for bypassd.
const DefaultProfileDir = "/perm/ncpos/profiles"

// Build works out the pairs: every bypass pair of the platform profile,
// each with the configuration's segment that names it. The profile is the
// operator's profileDir/<platform>.toml if there is one, else the
// compiled-in one. A profile that fails validation is refused: Setup
// then has Failsafe set, and only pairs whose own section is valid are
// opened — to be held in bypass, nothing else.
func Build(cfg *config.Config, profileDir, sysClassNet string, open Opener) Setup {
	var (
		set     Setup
		prof    *config.Profile
		suspect = map[int]bool{}
	)
	path := ""
	if profileDir != "" {
		path = filepath.Join(profileDir, cfg.Platform+".toml")
	}
	data, err := os.ReadFile(path)
	switch {
	case path == "" || errors.Is(err, fs.ErrNotExist):
		prof, set.Source = cfg.Profile(), "compiled-in profile "+cfg.Platform
	case err != nil:
		set.Failsafe = err.Error()
		prof, set.Source = cfg.Profile(), "compiled-in profile "+cfg.Platform+" (operator profile unreadable)"
	default:
		set.Source = path
		p, err := config.DecodeProfile(path, data)
		if err == nil && p.Name != cfg.Platform {
			err = fmt.Errorf("%s: name: %q, want the configured platform %q", path, p.Name, cfg.Platform)
		}
		prof = p
		if err != nil {
			set.Failsafe = strings.ReplaceAll(err.Error(), "\n", "; ")
			var ve *config.ValidationError
			if errors.As(err, &ve) {
				for _, fe := range ve.Errors {
					if i, ok := pairIndex(fe.Field); ok {
						suspect[i] = true
					}
				}
			}
			if p == nil {
				prof, set.Source = cfg.Profile(), "compiled-in profile "+cfg.Platform+" (operator profile refused)"
			}
		}
	}
	if prof == nil {
		if set.Failsafe == "" {
			set.Failsafe = fmt.Sprintf("no profile for platform %q", cfg.Platform)
		}
		return set
	}
	ports, resolveErr := prof.Resolve(sysClassNet)
	for i, bp := range prof.BypassPairs {
		p := &Pair{Name: bp.Name, Kind: bp.Backend, Timer: bp.Timer.Duration, Defaults: map[bypassapi.Event]bypassapi.State{}}
		p.Segment, p.TestPorts = pairRole(cfg, bp.Name, bp.Ports)
		for k := 0; k < 2 && k < len(bp.Ports); k++ {
			p.Ports[k] = bp.Ports[k]
			p.Ifnames[k] = ports[bp.Ports[k]]
		}
		for e, v := range map[bypassapi.Event]string{bypassapi.PowerOff: bp.PowerOff, bypassapi.OSOff: bp.OSOff, bypassapi.PowerRestore: bp.PowerRestore,
			bypassapi.PowerUp: bp.PowerUp, bypassapi.TimerExpiry: bp.TimerExpiry} {
			if v != "" {
				p.Defaults[e] = bypassapi.State(v)
			}
		}
		switch {
		case suspect[i]:
			p.Problem = "its profile section is invalid: not touched (the relay keeps its power-up state, bypass)"
		case bp.Backend == "none":
			p.Problem = "no relay (backend none)"
		case bp.RegisterMap == "missing":
			p.Problem = fmt.Sprintf("the %s register map of this platform is not public: fill it in (%s/%s.toml, see bypass/PROFILES.md)",
				bp.Backend, DefaultProfileDir, prof.Name)
		case needsInterfaces(bp.Backend) && (p.Ifnames[0] == "" || p.Ifnames[1] == ""):
			p.Problem = fmt.Sprintf("ports not found: %v", resolveErr)
		default:
			b, err := open(bp, p.Ifnames)
			if err != nil {
				p.Problem = "opening the relay: " + err.Error()
			} else {
				p.Backend = b
			}
		}
		set.Pairs = append(set.Pairs, p)
	}
	return set
}

var pairFieldRE = regexp.MustCompile(`^bypass_pair\[(\d+)\]`)

// pairIndex returns i for a field path inside bypass_pair[i].
func pairIndex(field string) (int, bool) {
	m := pairFieldRE.FindStringSubmatch(field)
	if m == nil {
		return 0, false
	}
	i, err := strconv.Atoi(m[1])
	return i, err == nil
}

var simPairRE = regexp.MustCompile(`^([a-z0-9-]{1,15})=([a-z0-9-]{1,15}),([^,=\s]{1,15}),([^,=\s]{1,15})$`)

// parseSimPairFlag parses bypassd's -sim-pair flag, "pair=segment,ifA,ifB":
// a sim relay between two kernel interfaces for the lab, as forwarderd's
// -segment gives it the segment by interface.
func parseSimPairFlag(s string) (name, segment string, ifnames [2]string, err error) {
	m := simPairRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil || m[3] == m[4] {
		return "", "", ifnames, fmt.Errorf("sim pair %q: want pair=segment,ifA,ifB with two interfaces", s)
	}
	return m[1], m[2], [2]string{m[3], m[4]}, nil
}

// simPair opens the lab relay for a -sim-pair flag.
func simPair(spec string, timer, unit time.Duration, cutLinks bool) (*Pair, error) {
	name, seg, ifs, err := parseSimPairFlag(spec)
	if err != nil {
		return nil, err
	}
	p := &Pair{Name: name, Segment: seg, Ports: ifs, Ifnames: ifs, Kind: "sim", Timer: timer,
		Defaults: map[bypassapi.Event]bypassapi.State{bypassapi.TimerExpiry: bypassapi.Bypass}}
	b, err := openSim(name, ifs[0], ifs[1], unit)
	if err != nil {
		return nil, err
	}
	b.CutLinks = cutLinks
	p.Backend = b
	return p, nil
}
