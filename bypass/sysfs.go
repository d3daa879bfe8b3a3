package bypass

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
)

// files is how the sysfs backend reads and writes a driver's files; tests
// substitute an emulated driver that logs every write.
type files interface {
	read(path string) (string, error)
	write(path, value string) error
}

// osFiles are real driver files. A write is one write(2) of the value to a
// file that must already exist (a missing file means the driver is not
// loaded, not something to create).
type osFiles struct{}

func (osFiles) read(path string) (string, error) {
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}

func (osFiles) write(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	return errors.Join(err, f.Close())
}

// sysfsBackend drives a relay through a vendor driver's files: Silicom's
// /proc/net/bypass/bypass_<if>/ (bypass, disc, bypass_pwoff, bypass_pwup,
// bypass_wd, reset_bypass_wd, wd_expire_time, taking on/off and
// milliseconds) or a Chelsio-style /sys/class/net/<if>/bypass/ directory.
type sysfsBackend struct {
	dir   string
	cfg   config.Sysfs
	fs    files
	caps  bypassapi.Caps
	count int
}

// expand replaces {if} and {if2} with the pair's interfaces.
func expand(s string, ifnames [2]string) string {
	return strings.NewReplacer("{if}", ifnames[0], "{if2}", ifnames[1]).Replace(s)
}

func newSysfs(fs files, cfg config.Sysfs, ifnames [2]string) (*sysfsBackend, error) {
	b := &sysfsBackend{dir: expand(cfg.Dir, ifnames), cfg: cfg, fs: fs}
	if _, err := os.Stat(b.dir); fs == (osFiles{}) && err != nil {
		return nil, fmt.Errorf("sysfs: driver directory: %w", err)
	}
	c := bypassapi.Caps{Events: map[bypassapi.Event][]bypassapi.State{}, Fixed: map[bypassapi.Event]bypassapi.State{}, ReadBack: true, ReadBackOf: bypassapi.ReadsLatch, LinkDownInBypass: true}
	tableCaps(&c, &b.cfg.State, b.cfg.Event)
	powerOffNotes(&c)
	if t := cfg.Timer; t.File != "" {
		c.Timer = &bypassapi.TimerCaps{Unit: t.Unit.Duration, Min: t.Unit.Duration, Max: time.Duration(t.Max) * t.Unit.Duration, TimeLeft: t.Left != ""}
	}
	b.caps = c
	return b, nil
}

func (b *sysfsBackend) path(file string) string { return filepath.Join(b.dir, file) }

func (b *sysfsBackend) writeAll(what string, list []config.FileWrite) error {
	for _, w := range list {
		if err := b.fs.write(b.path(w.File), w.Value); err != nil {
			return fmt.Errorf("sysfs: %s: writing %q to %s: %w", what, w.Value, b.path(w.File), err)
		}
	}
	return nil
}

func (b *sysfsBackend) recognise(what string, fsx *config.FileStates) (bypassapi.State, error) {
	cache := map[string]string{}
	var seen []string
	for _, s := range recogniseOrder {
		list := writesOf(fsx, s)
		if len(list) == 0 {
			continue
		}
		all := true
		for _, w := range list {
			v, ok := cache[w.File]
			if !ok {
				var err error
				if v, err = b.fs.read(b.path(w.File)); err != nil {
					return bypassapi.Unknown, fmt.Errorf("sysfs: reading %s: %w", b.path(w.File), err)
				}
				v = strings.TrimSpace(v)
				cache[w.File] = v
				seen = append(seen, fmt.Sprintf("%s=%q", w.File, v))
			}
			if v != w.Value {
				all = false
				break
			}
		}
		if all {
			return s, nil
		}
	}
	return bypassapi.Unknown, fmt.Errorf("sysfs: %s in %s reads %s, which matches no state", what, b.dir, strings.Join(seen, " "))
}

func (b *sysfsBackend) Caps() bypassapi.Caps { return b.caps }

func (b *sysfsBackend) Set(s bypassapi.State) error {
	list := writesOf(&b.cfg.State, s)
	if len(list) == 0 {
		return fmt.Errorf("sysfs: state %s: %w", s, errUnsupported)
	}
	return b.writeAll("set "+string(s), list)
}

func (b *sysfsBackend) Get() (bypassapi.State, error) { return b.recognise("state", &b.cfg.State) }

func (b *sysfsBackend) SetDefault(e bypassapi.Event, s bypassapi.State) error {
	list := writesOf(b.cfg.Event(string(e)), s)
	if len(list) == 0 {
		return fmt.Errorf("sysfs: %s default %s: %w", e, s, errUnsupported)
	}
	return b.writeAll(fmt.Sprintf("%s default %s", e, s), list)
}

func (b *sysfsBackend) Default(e bypassapi.Event) (bypassapi.State, error) {
	fsx := b.cfg.Event(string(e))
	if !anyWrites(fsx) {
		return bypassapi.Unknown, fmt.Errorf("sysfs: %s default: %w", e, errUnsupported)
	}
	return b.recognise(string(e)+" default", fsx)
}

func (b *sysfsBackend) Arm(d time.Duration) (time.Duration, error) {
	t := b.cfg.Timer
	if t.File == "" {
		return 0, fmt.Errorf("sysfs: controller timer: %w", errUnsupported)
	}
	n := int(min(roundUp(d, t.Unit.Duration), int64(t.Max)))
	if err := b.fs.write(b.path(t.File), strconv.Itoa(n)); err != nil {
		return 0, fmt.Errorf("sysfs: arming timer: %w", err)
	}
	b.count = n
	return time.Duration(n) * t.Unit.Duration, nil
}

func (b *sysfsBackend) Kick() error {
	t := b.cfg.Timer
	if t.File == "" {
		return fmt.Errorf("sysfs: controller timer: %w", errUnsupported)
	}
	if b.count == 0 {
		return errors.New("sysfs: kick: timer not armed")
	}
	if t.Left != "" {
		// Silicom's wd_expire_time reads -1 once the timer has expired.
		if v, err := b.fs.read(b.path(t.Left)); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n < 0 {
				return fmt.Errorf("sysfs: %w", errTimerExpired)
			}
		}
	}
	if len(t.Kick) > 0 {
		return b.writeAll("kick timer", t.Kick)
	}
	return b.fs.write(b.path(t.File), strconv.Itoa(b.count))
}

func (b *sysfsBackend) Disarm() error {
	t := b.cfg.Timer
	if t.File == "" {
		return fmt.Errorf("sysfs: controller timer: %w", errUnsupported)
	}
	b.count = 0
	return b.fs.write(b.path(t.File), "0")
}

func (b *sysfsBackend) TimeLeft() (time.Duration, error) {
	t := b.cfg.Timer
	if t.Left == "" {
		return 0, fmt.Errorf("sysfs: timer time left: %w", errUnsupported)
	}
	v, err := b.fs.read(b.path(t.Left))
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("sysfs: %s reads %q, want a number", t.Left, v)
	}
	return time.Duration(max(n, 0)) * t.Unit.Duration, nil
}

func (b *sysfsBackend) Close() error { return nil }
