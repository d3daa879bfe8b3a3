// Package bypass keeps the appliance's bypass relays where the forwarder's
// health says they should be: in bypass (the two ports of a pair joined by
// the relay, traffic flowing past the box) whenever the forwarder is not
// healthy, in normal (traffic through the forwarder) only while it is.
// bypassd (services/bypassd) runs it as its own process, so it outlives a
// crashed or hung forwarderd.
//
// # Model
//
// A bypass pair (a Pair, from the platform profile) belongs to a segment of
// the configuration. Its relay is in one of three States: Normal, Bypass or
// Disconnect (both ports open, to make the far ends fail over). The
// hardware has defaults of its own for three Events — power loss, power-up
// until software takes over ("Just-On"), and expiry of the bypass
// controller's own watchdog timer — and bypassd sets them where the
// hardware lets it. The controller timer (Backend.Arm/Kick/Disarm/
// TimeLeft) has a coarse granularity (a second, or 100ms×2^n); bypassd
// arms it and kicks it at a third of its timeout, so that if bypassd
// itself dies or hangs the relay falls to bypass on its own. Capabilities
// (Caps) are discovered and reported, never hidden: what a relay cannot do
// (fail open without power, read back its state, set a default) is listed.
// Every set is read back.
//
// # Policy
//
// Decider applies the Policy to one pair, with a fake clock in tests:
//
//   - from power-on (or bypassd's start) a pair is in bypass until the
//     forwarder has been healthy for the start hold-down (default 1s, at
//     most the hold-down): no failure came before it to damp; a bypassd
//     restarted under a working appliance adopts relays already in normal
//     instead of bouncing them;
//   - one unhealthy verdict puts it in bypass at once: the Supervisor asks
//     forwarderd's /health (a typed health.Report) every Budget/6 with a
//     Budget/3 timeout (default budget 300ms: 50ms and 100ms), so a dead
//     forwarderd is seen within 50ms and a hung one within 150ms, leaving
//     the rest of the budget for the relay; a forwarderd that is not live
//     serves no segment, and a segment condition (link_down, port_absent,
//     tx_stalled) puts that segment's pair in bypass, by kind, never by
//     the wording of a message;
//   - after a failure, back to normal only after the hold-down (default
//     5s) of continuous health; each failure within the flap window (2m) doubles it, up to
//     MaxHoldDown (2m);
//   - links down on ports whose hardware relay is in bypass are expected
//     (the relay cuts the NICs off) and do not count against the forwarder;
//   - manual overrides (with a reason, optionally an expiry) beat health,
//     a planned shutdown, reboot or update beats overrides (bypass first,
//     then the box goes down; SIGTERM to bypassd is one), and a refused
//     profile (failsafe) beats everything: every pair bypass.
//
// Every transition is logged with its cause by a Journal: in memory, and
// appended to /perm/ncpos/bypass.log as JSON lines, rotated at a size cap.
//
// # Backends
//
// Each backend is configured by the pair's section of the platform profile
// (see PROFILES.md in this folder for the format) and unit-tested against an
// emulated device that checks the exact accesses for every state:
//
//   - superio: GPIO of a Winbond W83627-class Super I/O through /dev/port
//     (index/data ports 0x2e/0x2f, entry key 0x87 0x87, exit key 0xAA,
//     logical device and bit map from the profile); Lanner Gen1/Gen2-style
//     boards;
//   - smbus: a bypass controller on /dev/i2c-N at an address, byte-data
//     registers from the profile; Lanner Gen3-style modules;
//   - ioport: relay bits in plain I/O ports (0x8e3/0x8e7-style);
//   - sysfs: a vendor driver's files (Silicom /proc/net/bypass/bypass_<if>/,
//     Chelsio-style /sys/class/net/<if>/bypass/);
//   - bpctl: Silicom's /dev/bpctl0 ioctls (GET_BYPASS_CAPS, SET_BYPASS,
//     SET_DISC, SET_BYPASS_PWOFF/PWUP, SET_BYPASS_WD, RESET_BYPASS_WD_TIMER,
//     GET_WD_EXPIRE_TIME), capabilities as the adapter reports them;
//   - exec: a vendor command line tool (argv, no shell) as an escape hatch;
//   - sim: the lab's relay, in the kernel (see Sim): a tc program on both
//     ports' ingress that redirects each to the other in bypass, and a BPF
//     map holding the state and the controller timer, checked by the
//     program on every frame — so relay and timer survive bypassd exactly
//     as hardware does, with no helper process.
//
// The register maps of most boxes are not public. A compiled-in profile
// then says register_map = "missing", bypassd reports the pair as not
// drivable (and leaves the relay in its power-up state, bypass), and the
// operator fills the map in a copy of the profile at
// /perm/ncpos/profiles/<platform>.toml. A profile that fails validation is
// refused with every problem named (file:line: field: message) and bypassd
// holds every pair it can still trust in bypass (Build, Options.Failsafe).
package bypass
