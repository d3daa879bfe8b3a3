// Command hangctl is a test-only program, built only into test images (the
// image builder puts it in /user/test/, which init supervises when
// present). On request it freezes or thaws an ncpos daemon with SIGSTOP or
// SIGCONT, so the QEMU tests can make the appliance hang the way a wedged
// daemon would. It listens on the management interface only.
//
//	POST /stop?daemon=forwarderd    SIGSTOP every process named forwarderd
//	POST /cont?daemon=forwarderd    SIGCONT them
//	POST /term?daemon=bypassd       SIGTERM them (gokrazy starts them again)
//	POST /eat?leave=3               take memory until 3 % of it is left
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

func pidsOf(name string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err == nil && strings.TrimSpace(string(comm)) == name {
			pids = append(pids, pid)
		}
	}
	return pids
}

func signalHandler(sig syscall.Signal) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("daemon")
		if name == "" || strings.ContainsAny(name, "/.") {
			http.Error(w, "want ?daemon=NAME", http.StatusBadRequest)
			return
		}
		pids := pidsOf(name)
		if len(pids) == 0 {
			http.Error(w, "no process named "+name, http.StatusNotFound)
			return
		}
		for _, pid := range pids {
			if err := syscall.Kill(pid, sig); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		log.Printf("hangctl: %v to %s %v", sig, name, pids)
		fmt.Fprintf(w, "%v sent to %s %v\n", sig, name, pids)
	}
}

// eaten holds what /eat took, so that it stays taken.
var eaten [][]byte

// eat takes memory, touching every page, until MemAvailable is down to
// leave percent of MemTotal: the box runs out of memory as a leaking
// daemon would make it, short of the kernel's OOM killer.
func eat(w http.ResponseWriter, r *http.Request) {
	leave, err := strconv.Atoi(r.URL.Query().Get("leave"))
	if err != nil || leave < 1 || leave > 50 {
		http.Error(w, "want ?leave=PERCENT (1-50)", http.StatusBadRequest)
		return
	}
	total, avail, err := meminfo()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	want := (int64(avail) - int64(total)*int64(leave)/100) << 10 // KiB to bytes
	// Answer first: a box short of memory crawls, and the answer might
	// never leave it before the watchdog resets it.
	fmt.Fprintf(w, "taking %d MiB of %d KiB available\n", want>>20, avail)
	go func() {
		const chunk = 4 << 20
		for took := int64(0); took+chunk <= want; took += chunk {
			b := make([]byte, chunk)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			eaten = append(eaten, b)
		}
		_, left, _ := meminfo()
		log.Printf("hangctl: took %d MiB, %d of %d KiB available", len(eaten)*chunk>>20, left, total)
	}()
}

func meminfo() (total, avail uint64, err error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "MemTotal:":
			total = n
		case "MemAvailable:":
			avail = n
		}
	}
	return total, avail, nil
}

func main() {
	addr := flag.String("listen", ":8081", "address to listen on")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /stop", signalHandler(syscall.SIGSTOP))
	mux.HandleFunc("POST /cont", signalHandler(syscall.SIGCONT))
	mux.HandleFunc("POST /term", signalHandler(syscall.SIGTERM)) // gokrazy restarts the daemon
	mux.HandleFunc("POST /eat", eat)
	log.Fatal(http.ListenAndServe(*addr, mux))
}
