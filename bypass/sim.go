package bypass

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/bypass/bpf"
	"github.com/ncpos/ncpos/bypass/bypassapi"
)

// The sim relay lives entirely in the kernel, so that it outlives bypassd
// exactly as a hardware relay and its controller do:
//
//   - the "relay" is a tc (cls_bpf, direct-action) program on the ingress
//     of both ports of the pair; in bypass it redirects every frame out of
//     the other port (bpf_redirect), which is what a relay joining the two
//     cables does; in normal it lets frames on (to XDP's forwarder or the
//     stack); in disconnect it drops them;
//   - the "controller" is a one-entry BPF array map next to it holding the
//     state, the timer's deadline (CLOCK_MONOTONIC, as bpf_ktime_get_ns)
//     and what to do when it expires; the program checks the deadline on
//     every frame that arrives in normal and latches the expiry state, and
//     every reader does the same, so a bypassd that stops kicking (killed, hung) leaves a relay
//     that falls to bypass on its own;
//   - the filters hold the program and the program holds the map: nothing
//     is pinned, and a restarted bypassd finds the map again through the
//     filter's program (and adopts its state rather than flipping it).
//
// XDP runs before tc ingress. While forwarderd's XDP programs are
// attached they see frames first, so a live-but-unhealthy forwarder still
// forwards what it redirects; the moment forwarderd dies its programs go
// (they hang on its BPF links) and every frame meets the relay.

// simRelay is the controller's state, the map value (struct relay of
// bpf/relay.c).
type simRelay = bpf.RelayRelay

// simRelaySize is the map's value size.
const simRelaySize = uint32(unsafe.Sizeof(simRelay{}))

var simModes = []bypassapi.State{bypassapi.Normal, bypassapi.Bypass, bypassapi.Disconnect}

func simMode(s bypassapi.State) uint32 {
	for i, m := range simModes {
		if m == s {
			return uint32(i)
		}
	}
	return 1
}

// TC verdicts.
const (
	tcActOK       = 0
	tcActShot     = 2
	tcActRedirect = 7
)

// newSimObjects loads the relay program and its map (bpf/relay.c).
func newSimObjects() (*ebpf.Map, *ebpf.Program, error) {
	spec, err := bpf.LoadRelay()
	if err != nil {
		return nil, nil, fmt.Errorf("sim: %w", err)
	}
	var objs bpf.RelayObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		return nil, nil, fmt.Errorf("sim: loading the relay: %w", err)
	}
	return objs.NcposRelay, objs.RelayIngress, nil
}

// monotonic is CLOCK_MONOTONIC in ns, the clock of bpf_ktime_get_ns.
func monotonic() uint64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// Sim is the lab's relay between two interfaces of the current network
// namespace.
type Sim struct {
	Name    string    // filter name: ncpos-relay-<pair>
	Ifs     [2]string // the two ports
	idx     [2]int
	unit    time.Duration
	m       *ebpf.Map
	prog    *ebpf.Program
	Adopted bool // an existing relay was found and kept
	// CutLinks emulates a relay that cuts the NIC off in bypass and
	// disconnect (see simcut.go).
	CutLinks bool

	cutKnown, cutApplied bool
}

// DefaultSimTimerUnit is the sim controller's timer granularity.
const DefaultSimTimerUnit = 100 * time.Millisecond

func simFilterName(pair string) string { return "ncpos-relay-" + pair }

// openSim connects to the sim relay of pair between ifA and ifB, installing
// it (in bypass, as a relay powers up) if there is none.
func openSim(pair, ifA, ifB string, unit time.Duration) (*Sim, error) {
	s, links, err := newSim(pair, ifA, ifB, unit)
	if err != nil {
		return nil, err
	}
	if err := s.adopt(links); err == nil {
		s.Adopted = true
		return s, nil
	}
	if err := s.install(links); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// FindSim connects to an existing sim relay of pair, installing nothing;
// it fails if there is none.
func FindSim(pair, ifA, ifB string, unit time.Duration) (*Sim, error) {
	s, links, err := newSim(pair, ifA, ifB, unit)
	if err != nil {
		return nil, err
	}
	if err := s.adopt(links); err != nil {
		return nil, fmt.Errorf("sim: no relay %s on %s and %s: %w", s.Name, ifA, ifB, err)
	}
	s.Adopted = true
	return s, nil
}

func newSim(pair, ifA, ifB string, unit time.Duration) (*Sim, [2]netlink.Link, error) {
	var links [2]netlink.Link
	if unit <= 0 {
		unit = DefaultSimTimerUnit
	}
	s := &Sim{Name: simFilterName(pair), Ifs: [2]string{ifA, ifB}, unit: unit}
	for i, name := range s.Ifs {
		l, err := netlink.LinkByName(name)
		if err != nil {
			return nil, links, fmt.Errorf("sim: port %s: %w", name, err)
		}
		links[i], s.idx[i] = l, l.Attrs().Index
	}
	return s, links, nil
}

// ourFilter finds the relay's filter on a link's ingress.
func ourFilter(l netlink.Link, name string) (*netlink.BpfFilter, error) {
	filters, err := netlink.FilterList(l, netlink.HANDLE_MIN_INGRESS)
	if err != nil {
		return nil, err
	}
	for _, f := range filters {
		if bf, ok := f.(*netlink.BpfFilter); ok && bf.Name == name {
			return bf, nil
		}
	}
	return nil, os.ErrNotExist
}

// adopt takes over a relay left by an earlier bypassd.
func (s *Sim) adopt(links [2]netlink.Link) error {
	fa, err := ourFilter(links[0], s.Name)
	if err != nil {
		return err
	}
	fb, err := ourFilter(links[1], s.Name)
	if err != nil || fb.Id != fa.Id {
		return errors.New("sim: relay filters do not match")
	}
	prog, err := ebpf.NewProgramFromID(ebpf.ProgramID(fa.Id))
	if err != nil {
		return err
	}
	info, err := prog.Info()
	if err != nil {
		prog.Close()
		return err
	}
	ids, _ := info.MapIDs()
	if len(ids) != 1 {
		prog.Close()
		return errors.New("sim: relay program has no map")
	}
	m, err := ebpf.NewMapFromID(ids[0])
	if err != nil {
		prog.Close()
		return err
	}
	s.prog, s.m = prog, m
	r, err := s.load()
	if err != nil || m.ValueSize() != simRelaySize || r.IfA != uint32(s.idx[0]) || r.IfB != uint32(s.idx[1]) {
		s.Close()
		return errors.New("sim: relay map does not match its ports")
	}
	return nil
}

func (s *Sim) install(links [2]netlink.Link) error {
	var err error
	if s.m, s.prog, err = newSimObjects(); err != nil {
		return err
	}
	r := simRelay{Mode: simMode(bypassapi.Bypass), IfA: uint32(s.idx[0]), IfB: uint32(s.idx[1]), ExpiryMode: simMode(bypassapi.Bypass)}
	if err := s.store(&r); err != nil {
		return err
	}
	for _, l := range links {
		q := &netlink.GenericQdisc{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT}, QdiscType: "clsact"}
		if err := netlink.QdiscAdd(q); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("sim: clsact on %s: %w", l.Attrs().Name, err)
		}
		if old, err := ourFilter(l, s.Name); err == nil {
			netlink.FilterDel(old)
		}
		f := &netlink.BpfFilter{
			FilterAttrs: netlink.FilterAttrs{LinkIndex: l.Attrs().Index, Parent: netlink.HANDLE_MIN_INGRESS, Handle: 1,
				Protocol: unix.ETH_P_ALL, Priority: 1},
			Fd: s.prog.FD(), Name: s.Name, DirectAction: true,
		}
		if err := netlink.FilterAdd(f); err != nil {
			return fmt.Errorf("sim: relay filter on %s: %w", l.Attrs().Name, err)
		}
	}
	return nil
}

// removeSim takes the relay of pair off ifA and ifB (and their clsact
// qdiscs if nothing else uses them). The lab calls it; bypassd never does,
// as a relay is part of the hardware.
func removeSim(pair, ifA, ifB string) error {
	var errs []error
	for _, name := range []string{ifA, ifB} {
		l, err := netlink.LinkByName(name)
		if err != nil {
			continue
		}
		if f, err := ourFilter(l, simFilterName(pair)); err == nil {
			errs = append(errs, netlink.FilterDel(f))
		}
		if rest, err := netlink.FilterList(l, netlink.HANDLE_MIN_INGRESS); err == nil && len(rest) == 0 {
			if eg, err := netlink.FilterList(l, netlink.HANDLE_MIN_EGRESS); err == nil && len(eg) == 0 {
				q := &netlink.GenericQdisc{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT}, QdiscType: "clsact"}
				if err := netlink.QdiscDel(q); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

func (s *Sim) load() (simRelay, error) {
	var r simRelay
	if err := s.m.Lookup(uint32(0), &r); err != nil {
		return r, fmt.Errorf("sim: reading the relay: %w", err)
	}
	return r, nil
}

func (s *Sim) store(r *simRelay) error {
	if err := s.m.Update(uint32(0), r, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("sim: writing the relay: %w", err)
	}
	return nil
}

// current reads the relay, latching an expiry that no frame has noticed
// yet, as the controller would on its own.
func (s *Sim) current() (simRelay, error) {
	r, err := s.load()
	if err != nil {
		return r, err
	}
	if r.Armed != 0 && r.Expired == 0 && monotonic() >= r.Deadline {
		r.Mode, r.Expired, r.Armed = r.ExpiryMode, 1, 0
		if err := s.store(&r); err != nil {
			return r, err
		}
	}
	return r, nil
}

func (s *Sim) Caps() bypassapi.Caps {
	return bypassapi.Caps{
		States:           []bypassapi.State{bypassapi.Normal, bypassapi.Bypass, bypassapi.Disconnect},
		Events:           map[bypassapi.Event][]bypassapi.State{bypassapi.TimerExpiry: {bypassapi.Bypass, bypassapi.Disconnect}},
		Fixed:            map[bypassapi.Event]bypassapi.State{bypassapi.PowerOff: bypassapi.Bypass, bypassapi.PowerUp: bypassapi.Bypass},
		Timer:            &bypassapi.TimerCaps{Unit: s.unit, Min: s.unit, Max: time.Hour, TimeLeft: true},
		ReadBack:         true,
		ReadBackOf:       bypassapi.ReadsRelay,
		LinkDownInBypass: s.CutLinks,
		Notes: []string{
			"lab relay: a tc program on both ports' ingress redirects each to the other in bypass",
			"XDP sees frames before tc: while forwarderd's programs are attached, frames they redirect take the forwarder path even in bypass",
			"disconnect drops only frames that reach tc",
		},
	}
}

// Set puts the relay into st and clears a latched expiry.
func (s *Sim) Set(st bypassapi.State) error {
	r, err := s.current()
	if err != nil {
		return err
	}
	r.Mode, r.Expired, r.FirstCarried = simMode(st), 0, 0
	if err := s.store(&r); err != nil {
		return err
	}
	if s.CutLinks {
		return s.setCut(st)
	}
	return nil
}

// SimStats is what the lab relay has carried.
type SimStats struct {
	// FirstCarried is when it first redirected a frame since it was last
	// set, in CLOCK_MONOTONIC ns (0: not yet).
	FirstCarried uint64
	Carried      uint64 // frames redirected in all
}

// Stats reads the relay's instrumentation.
func (s *Sim) Stats() (SimStats, error) {
	r, err := s.load()
	return SimStats{FirstCarried: r.FirstCarried, Carried: r.Carried}, err
}

// Monotonic is CLOCK_MONOTONIC in ns, the clock of SimStats.
func Monotonic() uint64 { return monotonic() }

func (s *Sim) Get() (bypassapi.State, error) {
	r, err := s.current()
	if err != nil {
		return bypassapi.Unknown, err
	}
	if int(r.Mode) >= len(simModes) {
		return bypassapi.Unknown, fmt.Errorf("sim: relay mode %d", r.Mode)
	}
	st := simModes[r.Mode]
	if s.CutLinks {
		if err := s.setCut(st); err != nil {
			return st, err
		}
	}
	return st, nil
}

// TimerExpired reports whether the controller's timer ran out (and the
// relay fell to its expiry state) since the last Set.
func (s *Sim) TimerExpired() (bool, error) {
	r, err := s.current()
	return r.Expired != 0, err
}

func (s *Sim) SetDefault(e bypassapi.Event, st bypassapi.State) error {
	if e != bypassapi.TimerExpiry || st == bypassapi.Normal {
		return fmt.Errorf("sim: %s default %s: %w", e, st, errUnsupported)
	}
	r, err := s.current()
	if err != nil {
		return err
	}
	r.ExpiryMode = simMode(st)
	return s.store(&r)
}

func (s *Sim) Default(e bypassapi.Event) (bypassapi.State, error) {
	if e != bypassapi.TimerExpiry {
		return bypassapi.Bypass, nil
	}
	r, err := s.current()
	if err != nil {
		return bypassapi.Unknown, err
	}
	return simModes[r.ExpiryMode%3], nil
}

func (s *Sim) Arm(d time.Duration) (time.Duration, error) {
	t := time.Duration(roundUp(d, s.unit)) * s.unit
	r, err := s.current()
	if err != nil {
		return 0, err
	}
	r.Armed, r.Expired, r.Timeout = 1, 0, uint64(t)
	r.Deadline = monotonic() + r.Timeout
	return t, s.store(&r)
}

func (s *Sim) Kick() error {
	r, err := s.current()
	if err != nil {
		return err
	}
	if r.Expired != 0 {
		return fmt.Errorf("sim: %w", errTimerExpired)
	}
	if r.Armed == 0 {
		return errors.New("sim: kick: timer not armed")
	}
	r.Deadline = monotonic() + r.Timeout
	return s.store(&r)
}

func (s *Sim) Disarm() error {
	r, err := s.current()
	if err != nil {
		return err
	}
	r.Armed = 0
	return s.store(&r)
}

func (s *Sim) TimeLeft() (time.Duration, error) {
	r, err := s.current()
	if err != nil || r.Armed == 0 {
		return 0, err
	}
	now := monotonic()
	if now >= r.Deadline {
		return 0, nil
	}
	return time.Duration(r.Deadline - now), nil
}

// Close lets go of the relay; it stays in the kernel.
func (s *Sim) Close() error {
	var errs []error
	if s.prog != nil {
		errs = append(errs, s.prog.Close())
	}
	if s.m != nil {
		errs = append(errs, s.m.Close())
	}
	return errors.Join(errs...)
}

// String describes the relay for logs.
func (s *Sim) String() string {
	return fmt.Sprintf("sim relay %s between %s", s.Name, strings.Join(s.Ifs[:], " and "))
}
