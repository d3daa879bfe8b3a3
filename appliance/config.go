package appliance

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/internal/durable"
)

// Paths of the configuration's life on the appliance.
const (
	// LastGoodConfig is the configuration of the latest boot that stayed
	// live and forwarding: it stands in for a PermConfig that does not
	// load.
	LastGoodConfig = "/perm/ncpos/last-good.toml"
	// BootConfig is the configuration init chose for this boot, on the
	// tmpfs of the daemons' sockets: every daemon, and every restart of
	// one, runs on the very same configuration, whatever happens to the
	// files on /perm meanwhile.
	BootConfig = "/run/ncpos/config.toml"
	// SettledConfig keeps, beside BootConfig, the configuration a change
	// in place replaced, until the change is confirmed or undone
	// (package web/change): a statusd started again in the same boot
	// knows what to go back to.
	SettledConfig = "/run/ncpos/config-settled.toml"
	// TrialConfig is a configuration the box boots on once, next: a
	// change that needs a reboot, waiting for its confirmation (package
	// web/change). Init removes it as it boots on it, so that a box
	// that restarts again before the change is confirmed comes up on
	// PermConfig, the version before.
	TrialConfig = "/perm/ncpos/trial.toml"
	// ConfigVersions holds the configuration's versions (package
	// config/versions): every change applied from afar.
	ConfigVersions = "/perm/ncpos/versions"
)

// loadConfig returns the configuration that takes effect: override when it
// exists and is valid, else base, else the built-in default. An invalid file
// never takes effect; its error is returned in rejected so that it can be
// shown and logged. source names the file that took effect.
func loadConfig(base, override string) (cfg *config.Config, source string, rejected []error) {
	cfg, _, source, rejected = chooseConfig(base, override, "")
	return cfg, source, rejected
}

// Choice is the configuration of one boot.
type Choice struct {
	Config   *config.Config
	Text     []byte // the file as it was read (the built-in default's text otherwise)
	Source   string
	Rejected []error
}

// ChooseConfig decides the boot's configuration: override (PermConfig)
// when it loads; when it exists and does not, lastGood, the one the box
// last ran well on; then base (the image's); then the built-in default.
// An override that is absent is not replaced by lastGood: removing it is
// how an operator goes back to the image's configuration.
func ChooseConfig(base, override, lastGood string) Choice {
	cfg, text, source, rejected := chooseConfig(base, override, lastGood)
	return Choice{Config: cfg, Text: text, Source: source, Rejected: rejected}
}

func chooseConfig(base, override, lastGood string) (*config.Config, []byte, string, []error) {
	var rejected []error
	try := func(path string) (*config.Config, []byte, bool) {
		if path == "" {
			return nil, nil, false
		}
		text, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, false
		}
		var c *config.Config
		if err == nil {
			c, err = config.Load(path)
		}
		if err != nil {
			rejected = append(rejected, fmt.Errorf("%s rejected, keeping the previous configuration: %w", path, err))
			return nil, nil, false
		}
		return c, text, true
	}
	if c, text, ok := try(override); ok {
		return c, text, override, rejected
	} else if len(rejected) > 0 {
		// The override is there and broken: the last good one stands in.
		if c, text, ok := try(lastGood); ok {
			return c, text, lastGood + " (last good: " + override + " was rejected)", rejected
		}
	}
	if c, text, ok := try(base); ok {
		return c, text, base, rejected
	}
	return config.Default(), config.DefaultTOML(), "built-in default", rejected
}

// takeTrial returns the trial configuration at path (TrialConfig) and
// removes it, durably, before the box runs on it; nil when there is none.
// One that does not load is removed all the same, and its error returned:
// the box then boots as if there were none.
func takeTrial(path string) (*Choice, error) {
	text, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s rejected: %w", path, err)
	}
	if err := durable.Remove(path); err != nil {
		// Booted on, it could be booted on again and again.
		return nil, fmt.Errorf("%s not booted on: removing it first: %w", path, err)
	}
	cfg, err := config.ParseOnBox(path, text)
	if err != nil {
		return nil, fmt.Errorf("%s rejected, booting on the configuration before: %w", path, err)
	}
	return &Choice{Config: cfg, Text: text, Source: path + " (once: the next boot is on the version before unless it is confirmed)"}, nil
}

// writeBootConfig keeps the boot's configuration text in path (BootConfig),
// atomically.
func writeBootConfig(path string, text []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return durable.WriteFile(path, text, 0o644)
}

// DaemonConfig is the configuration a daemon runs on: the file given with
// -config, else the one init chose for this boot (BootConfig), else (not
// started by init: the lab, a test) the one LoadConfig picks.
func DaemonConfig(path string) (*config.Config, error) {
	if path != "" {
		return config.Load(path)
	}
	if _, err := os.Stat(BootConfig); err == nil {
		return config.Load(BootConfig)
	}
	cfg, source, rejected := loadConfig(etcConfig, PermConfig)
	for _, r := range rejected {
		log.Print(r)
	}
	log.Printf("configuration: %s", source)
	return cfg, nil
}

// KeepLastGood writes text to path (LastGoodConfig) atomically, unless it
// already holds it: once per configuration, so it costs the card nothing
// while the box runs. It reports whether it wrote.
func KeepLastGood(path string, text []byte) (bool, error) {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, text) {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, fmt.Errorf("keeping the last good configuration: %w", err)
	}
	if err := durable.WriteFile(path, text, 0o644); err != nil {
		return false, fmt.Errorf("keeping the last good configuration: %w", err)
	}
	return true, nil
}
