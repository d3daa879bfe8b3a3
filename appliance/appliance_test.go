package appliance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/config"
)

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "etc.toml")
	override := filepath.Join(dir, "perm.toml")
	if err := os.WriteFile(base, []byte("hostname = \"from-etc\"\n[[segment]]\nname = \"s\"\nports = [\"LAN1\", \"LAN2\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	cfg, src, rej := loadConfig(base, override)
	if cfg.Hostname != "from-etc" || src != base || len(rej) != 0 {
		t.Fatalf("no override: %q from %s, rejected %v", cfg.Hostname, src, rej)
	}

	os.WriteFile(override, []byte("hostname = \"from-perm\"\n[watchdog]\ntimeout = \"0s\"\n"), 0o644)
	cfg, src, rej = loadConfig(base, override)
	if cfg.Hostname != "from-etc" || src != base {
		t.Fatalf("invalid override took effect: %q from %s", cfg.Hostname, src)
	}
	if len(rej) != 1 || !strings.Contains(rej[0].Error(), "perm.toml:3: watchdog.timeout") {
		t.Fatalf("rejected = %v, want the override's file:line: field", rej)
	}

	os.WriteFile(override, []byte("hostname = \"from-perm\"\n[[segment]]\nname = \"s\"\nports = [\"LAN3\", \"LAN4\"]\n"), 0o644)
	cfg, src, _ = loadConfig(base, override)
	if cfg.Hostname != "from-perm" || src != override {
		t.Fatalf("valid override: %q from %s", cfg.Hostname, src)
	}

	cfg, src, _ = loadConfig(filepath.Join(dir, "missing"), "")
	if src != "built-in default" || cfg.Hostname != config.Default().Hostname {
		t.Fatalf("nothing there: %q from %s", cfg.Hostname, src)
	}
}

func TestMachineID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "machine-id")
	id, err := machineID(path)
	if err != nil || len(id) != 32 {
		t.Fatalf("first boot: %q, %v", id, err)
	}
	again, err := machineID(path)
	if err != nil || again != id {
		t.Fatalf("second boot: %q, want %q", again, id)
	}
}

// TestChooseConfig: a broken /perm file is replaced by the last good
// configuration, then the image's; an absent one by the image's.
func TestChooseConfig(t *testing.T) {
	dir := t.TempDir()
	etc, perm, good := filepath.Join(dir, "etc.toml"), filepath.Join(dir, "perm.toml"), filepath.Join(dir, "last-good.toml")
	write := func(path, host string) {
		t.Helper()
		text := "hostname = \"" + host + "\"\n[[segment]]\nname = \"s\"\nports = [\"LAN1\", \"LAN2\"]\n"
		if host == "" {
			text = "hostname = \"bad name!\"\n"
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(etc, "from-etc")
	if c := ChooseConfig(etc, perm, good); c.Config.Hostname != "from-etc" || c.Source != etc || len(c.Rejected) != 0 {
		t.Errorf("no /perm file: %s from %s, %v", c.Config.Hostname, c.Source, c.Rejected)
	}
	write(good, "from-last-good")
	if c := ChooseConfig(etc, perm, good); c.Config.Hostname != "from-etc" {
		t.Errorf("no /perm file but a last good one: %s from %s; removing the file must go back to the image's", c.Config.Hostname, c.Source)
	}
	write(perm, "from-perm")
	c := ChooseConfig(etc, perm, good)
	if c.Config.Hostname != "from-perm" || !strings.Contains(string(c.Text), "from-perm") {
		t.Errorf("valid /perm file: %s from %s", c.Config.Hostname, c.Source)
	}
	write(perm, "")
	c = ChooseConfig(etc, perm, good)
	if c.Config.Hostname != "from-last-good" || len(c.Rejected) != 1 || !strings.Contains(c.Source, "last good") {
		t.Errorf("broken /perm file: %s from %s, rejected %v; want the last good one", c.Config.Hostname, c.Source, c.Rejected)
	}
	write(good, "")
	c = ChooseConfig(etc, perm, good)
	if c.Config.Hostname != "from-etc" || len(c.Rejected) != 2 {
		t.Errorf("broken /perm and last good files: %s from %s, rejected %v", c.Config.Hostname, c.Source, c.Rejected)
	}
	os.Remove(etc)
	c = ChooseConfig(etc, perm, good)
	if c.Source != "built-in default" || string(c.Text) != string(config.DefaultTOML()) {
		t.Errorf("nothing usable: %s", c.Source)
	}

	// KeepLastGood writes once per configuration.
	lg := filepath.Join(dir, "perm/ncpos/last-good.toml")
	for i, want := range []bool{true, false} {
		wrote, err := KeepLastGood(lg, []byte("hostname = \"x\"\n"))
		if err != nil || wrote != want {
			t.Errorf("keep %d: wrote %v, %v; want %v", i, wrote, err, want)
		}
	}
	if wrote, _ := KeepLastGood(lg, []byte("hostname = \"y\"\n")); !wrote {
		t.Error("a changed configuration was not kept")
	}
}

// TestTakeTrial: the trial configuration is booted on once: it is gone
// once taken, and one that does not load is gone too, with its error.
func TestTakeTrial(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trial.toml")
	if c, err := takeTrial(path); c != nil || err != nil {
		t.Fatalf("no trial: %v, %v", c, err)
	}
	text := "hostname = \"trial\"\n[[segment]]\nname = \"s\"\nports = [\"LAN1\", \"LAN2\"]\n"
	os.WriteFile(path, []byte(text), 0o600)
	c, err := takeTrial(path)
	if err != nil || c == nil || c.Config.Hostname != "trial" || string(c.Text) != text || !strings.Contains(c.Source, path) {
		t.Fatalf("a trial: %+v, %v", c, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the trial is still there once taken: %v", err)
	}
	os.WriteFile(path, []byte("hostname = 7\n"), 0o600)
	if c, err := takeTrial(path); c != nil || err == nil || !strings.Contains(err.Error(), "hostname") {
		t.Errorf("a trial that does not load: %+v, %v, want an error naming hostname", c, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a trial that does not load is still there: %v", err)
	}
}

// TestFirstProcess: init boots only as pid 1; anywhere else it says why
// and touches nothing.
func TestFirstProcess(t *testing.T) {
	if err := firstProcess(1); err != nil {
		t.Errorf("pid 1: %v", err)
	}
	if err := firstProcess(4242); err == nil || !strings.Contains(err.Error(), "not as pid 4242") {
		t.Errorf("pid 4242: %v, want a refusal naming the pid", err)
	}
}
