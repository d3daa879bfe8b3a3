// Command hangself is a test-only program for update tests: put into a
// test image's /user/test/, it freezes statusd (SIGSTOP) as soon as it
// runs, so that the build never comes up healthy and its update must
// fall back to the previous build. (The watchdog then resets the box once
// the boot grace period is over.)
package main

import (
	"flag"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	daemon := flag.String("daemon", "statusd", "daemon to freeze")
	flag.Parse()
	// Freeze the daemon as soon as it runs, and again whenever gokrazy
	// restarts it.
	for range time.Tick(100 * time.Millisecond) {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
			stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if strings.TrimSpace(string(comm)) == *daemon && !strings.Contains(string(stat), ") T ") {
				log.Printf("hangself: SIGSTOP to %s (pid %d)", *daemon, pid)
				syscall.Kill(pid, syscall.SIGSTOP)
			}
		}
	}
}
