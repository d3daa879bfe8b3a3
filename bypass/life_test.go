package bypass

import (
	"testing"
	"time"

	"github.com/ncpos/ncpos/config"
)

// boxLife runs bypassd's supervisor, as bypassd builds it from a profile,
// against emulated hardware on a fake clock: the behaviour tests of each
// hardware backend take a box through its life with it.
type boxLife struct {
	t          *testing.T
	c          *clock
	cfg        *config.Config
	profileDir string // "" for the compiled-in profile
	sys        string // /sys/class/net
	open       Opener
	tick       func(time.Duration) // lets the hardware's own clock run
	pairs      int                 // how many pairs the profile has
	prober     *fakeProber
	sup        *Supervisor
}

// twoSegments is a configuration of platform with seg1 on LAN1/LAN2
// (pair1) and seg2 on LAN3/LAN4 (pair2).
func twoSegments(t *testing.T, platform string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("x.toml", []byte(`platform = "`+platform+`"
[[segment]]
name = "seg1"
ports = ["LAN1", "LAN2"]
bypass = "pair1"
[[segment]]
name = "seg2"
ports = ["LAN3", "LAN4"]
bypass = "pair2"
`))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// start (re)starts bypassd: a new supervisor on freshly opened backends,
// with the forwarder as the prober says.
func (l *boxLife) start() {
	l.t.Helper()
	if l.prober == nil {
		l.prober = &fakeProber{v: fwDead}
	}
	if l.sys == "" {
		l.sys = l.t.TempDir()
	}
	set := Build(l.cfg, l.profileDir, l.sys, l.open)
	if set.Failsafe != "" || len(set.Pairs) != l.pairs {
		l.t.Fatalf("setup %+v", set)
	}
	for _, p := range set.Pairs {
		if p.Backend == nil {
			l.t.Fatalf("%s not driven: %s", p.Name, p.Problem)
		}
	}
	log := newJournal("", 0)
	log.Logf = l.t.Logf
	l.sup = newSupervisor(set.Pairs, Options{Prober: l.prober, Log: log, Now: l.c.now})
	l.sup.Start(l.t.Context())
}

// run lets d pass on the box in steps of 50 ms: the hardware's clock, and
// bypassd's loop unless bypassd is dead.
func (l *boxLife) run(d time.Duration, bypassd bool) {
	const step = 50 * time.Millisecond
	for end := l.c.at(d); l.c.now().Before(end); {
		l.c.advance(step)
		if l.tick != nil {
			l.tick(step)
		}
		if bypassd {
			l.sup.Step(l.t.Context())
		}
	}
}

// forwarder sets what the forwarder answers from now on.
func (l *boxLife) forwarder(live bool) {
	l.prober.v = fwDead
	if live {
		l.prober.v = fwOK
	}
}
