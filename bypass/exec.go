package bypass

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
)

// runner runs one command line (argv, no shell) and returns its output;
// tests substitute a fake vendor tool.
type runner func(ctx context.Context, argv []string) ([]byte, error)

func runCommand(ctx context.Context, argv []string) ([]byte, error) {
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// execBackend runs a vendor's command line tool: the escape hatch for
// relays that only the vendor's tool knows how to drive.
type execBackend struct {
	cfg     config.Exec
	run     runner
	vars    map[string]string
	match   []stateRE
	caps    bypassapi.Caps
	timeout time.Duration
	unit    time.Duration
}

type stateRE struct {
	s  bypassapi.State
	re *regexp.Regexp
}

func newExec(run runner, cfg config.Exec, pair string, ifnames [2]string) (*execBackend, error) {
	b := &execBackend{cfg: cfg, run: run, vars: map[string]string{"{if}": ifnames[0], "{if2}": ifnames[1], "{pair}": pair},
		timeout: cfg.Timeout.Duration, unit: cfg.TimerUnit.Duration}
	if b.timeout <= 0 {
		b.timeout = 2 * time.Second
	}
	if b.unit <= 0 {
		b.unit = time.Second
	}
	for _, s := range recogniseOrder {
		expr := *cfg.Match.Of(string(s))
		if expr == "" {
			continue
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("exec: match.%s: %w", s, err)
		}
		b.match = append(b.match, stateRE{s, re})
	}
	c := bypassapi.Caps{Events: map[bypassapi.Event][]bypassapi.State{}, Fixed: map[bypassapi.Event]bypassapi.State{}, ReadBack: len(cfg.Get) > 0, LinkDownInBypass: true}
	c.ReadBackOf = bypassapi.ReadsNothing
	if c.ReadBack {
		c.ReadBackOf = bypassapi.ReadsTool
	}
	tableCaps(&c, &b.cfg.State, b.cfg.Event)
	powerOffNotes(&c)
	if len(cfg.Arm) > 0 {
		c.Timer = &bypassapi.TimerCaps{Unit: b.unit, Min: b.unit, Max: cfg.TimerMax.Duration}
	}
	if !c.ReadBack {
		c.Notes = append(c.Notes, "no get command: the state cannot be read back")
	}
	b.caps = c
	return b, nil
}

func (b *execBackend) exec(argv []string, extra map[string]string) ([]byte, error) {
	args := make([]string, len(argv))
	for i, a := range argv {
		for k, v := range b.vars {
			a = strings.ReplaceAll(a, k, v)
		}
		for k, v := range extra {
			a = strings.ReplaceAll(a, k, v)
		}
		args[i] = a
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	out, err := b.run(ctx, args)
	if err != nil {
		return out, fmt.Errorf("exec: %w", err)
	}
	return out, nil
}

func (b *execBackend) Caps() bypassapi.Caps { return b.caps }

func (b *execBackend) Set(s bypassapi.State) error {
	argv := writesOf(&b.cfg.State, s)
	if len(argv) == 0 {
		return fmt.Errorf("exec: state %s: %w", s, errUnsupported)
	}
	_, err := b.exec(argv, nil)
	return err
}

func (b *execBackend) Get() (bypassapi.State, error) {
	if len(b.cfg.Get) == 0 {
		return bypassapi.Unknown, fmt.Errorf("exec: reading the state: %w", errUnsupported)
	}
	out, err := b.exec(b.cfg.Get, nil)
	if err != nil {
		return bypassapi.Unknown, err
	}
	for _, m := range b.match {
		if m.re.Match(out) {
			return m.s, nil
		}
	}
	return bypassapi.Unknown, fmt.Errorf("exec: output of %s matches no state: %q", b.cfg.Get[0], strings.TrimSpace(string(out)))
}

func (b *execBackend) SetDefault(e bypassapi.Event, s bypassapi.State) error {
	argv := writesOf(b.cfg.Event(string(e)), s)
	if len(argv) == 0 {
		return fmt.Errorf("exec: %s default %s: %w", e, s, errUnsupported)
	}
	_, err := b.exec(argv, nil)
	return err
}

func (b *execBackend) Default(e bypassapi.Event) (bypassapi.State, error) {
	return bypassapi.Unknown, fmt.Errorf("exec: reading the %s default: %w", e, errUnsupported)
}

func (b *execBackend) Arm(d time.Duration) (time.Duration, error) {
	if len(b.cfg.Arm) == 0 {
		return 0, fmt.Errorf("exec: controller timer: %w", errUnsupported)
	}
	t := time.Duration(roundUp(d, b.unit)) * b.unit
	if m := b.cfg.TimerMax.Duration; m > 0 && t > m {
		t = m / b.unit * b.unit
	}
	_, err := b.exec(b.cfg.Arm, map[string]string{"{ms}": strconv.FormatInt(t.Milliseconds(), 10), "{s}": strconv.FormatInt(int64(t/time.Second), 10)})
	return t, err
}

func (b *execBackend) Kick() error {
	if len(b.cfg.Kick) == 0 {
		return fmt.Errorf("exec: controller timer: %w", errUnsupported)
	}
	_, err := b.exec(b.cfg.Kick, nil)
	return err
}

func (b *execBackend) Disarm() error {
	if len(b.cfg.Disarm) == 0 {
		return fmt.Errorf("exec: controller timer: %w", errUnsupported)
	}
	_, err := b.exec(b.cfg.Disarm, nil)
	return err
}

func (b *execBackend) TimeLeft() (time.Duration, error) {
	return 0, fmt.Errorf("exec: timer time left: %w", errUnsupported)
}

func (b *execBackend) Close() error { return nil }
