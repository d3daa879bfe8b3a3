// Command hangself is a test-only program for update tests: put into a
// test image's /user/test/, it freezes statusd (SIGSTOP) as soon as it
// runs, so that the build never comes up healthy and its update must
// fall back to the previous build. (The watchdog then resets the box once
// the boot grace period is over.)
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/ncpos/ncpos/internal/procs"
)

func main() {
	daemon := flag.String("daemon", "statusd", "daemon to freeze")
	flag.Parse()
	// Freeze the daemon as soon as it runs, and again whenever gokrazy
	// restarts it.
	for range time.Tick(100 * time.Millisecond) {
		for _, pid := range procs.Proc.Named(*daemon) {
			stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if !strings.Contains(string(stat), ") T ") {
				log.Printf("hangself: SIGSTOP to %s (pid %d)", *daemon, pid)
				syscall.Kill(pid, syscall.SIGSTOP)
			}
		}
	}
}
