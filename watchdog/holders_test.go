package watchdog

import (
	"github.com/ncpos/ncpos/watchdog/watchdogapi"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestHolders(t *testing.T) {
	proc := t.TempDir()
	mk := func(pid, comm string, fds map[string]string) {
		dir := filepath.Join(proc, pid, "fd")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(proc, pid, "comm"), []byte(comm+"\n"), 0o644)
		for fd, target := range fds {
			if err := os.Symlink(target, filepath.Join(dir, fd)); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("1", "init", map[string]string{"0": "/dev/console", "7": "/dev/watchdog"})
	mk("230", "watchdogd", map[string]string{"3": "/dev/watchdog"})
	mk("231", "statusd", map[string]string{"3": "/dev/null", "4": "/dev/watchdog_not"})
	mk("232", "other", map[string]string{"5": "/dev/watchdog1"})
	os.MkdirAll(filepath.Join(proc, "sys"), 0o755)

	got, err := Holders(proc)
	if err != nil {
		t.Fatal(err)
	}
	want := []watchdogapi.Holder{
		{PID: 1, Name: "init", FD: 7, Path: "/dev/watchdog"},
		{PID: 230, Name: "watchdogd", FD: 3, Path: "/dev/watchdog"},
		{PID: 232, Name: "other", FD: 5, Path: "/dev/watchdog1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Holders = %+v, want %+v", got, want)
	}
}

func TestOpenNotAWatchdog(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "wd")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fromFile(f); err == nil {
		t.Fatal("FromFile accepted a regular file")
	}
}
