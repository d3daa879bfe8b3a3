// Command hangctl is a test-only program, built only into test images (the
// image builder puts it in /user/test/, which init supervises when
// present). On request it freezes or thaws an ncpos daemon with SIGSTOP or
// SIGCONT, so the QEMU tests can make the appliance hang the way a wedged
// daemon would. It listens on the management interface only.
//
//	POST /stop?daemon=forwarderd    SIGSTOP every process named forwarderd
//	POST /cont?daemon=forwarderd    SIGCONT them
//	POST /term?daemon=bypassd       SIGTERM them (gokrazy starts them again)
//	POST /kill?daemon=forwarderd    SIGKILL them (gokrazy starts them again)
//	POST /txoff?port=eth4           stop an 82574L port's transmit unit
//	POST /txon?port=eth4            start it again
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"strings"
	"syscall"

	"github.com/ncpos/ncpos/internal/procs"
)

func signalHandler(sig syscall.Signal) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("daemon")
		if name == "" || strings.ContainsAny(name, "/.") {
			http.Error(w, "want ?daemon=NAME", http.StatusBadRequest)
			return
		}
		pids := procs.Proc.Named(name)
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

func main() {
	addr := flag.String("listen", ":8081", "address to listen on")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /stop", signalHandler(syscall.SIGSTOP))
	mux.HandleFunc("POST /cont", signalHandler(syscall.SIGCONT))
	mux.HandleFunc("POST /term", signalHandler(syscall.SIGTERM)) // gokrazy restarts the daemon
	mux.HandleFunc("POST /kill", signalHandler(syscall.SIGKILL))
	mux.HandleFunc("POST /txoff", txHandler(false))
	mux.HandleFunc("POST /txon", txHandler(true))
	log.Fatal(http.ListenAndServe(*addr, mux))
}
