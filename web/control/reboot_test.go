package control

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/ipc/ipctest"
	"github.com/ncpos/ncpos/watchdog"
)

// TestGokrazyRebooter: the planned record is written first, then gokrazy
// is asked, on its unix socket with its password, for a plain async
// reboot.
func TestGokrazyRebooter(t *testing.T) {
	dir, err := os.MkdirTemp("", "ncpt-gk-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "gokrazy-http.sock")
	refuse := false
	records := watchdog.Records{Dir: filepath.Join(dir, "watchdog")}

	got := make(chan string, 1)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse {
			http.Error(w, "httpPassword not set and request from unexpected address", http.StatusInternalServerError)
			return
		}
		if _, err := os.Stat(filepath.Join(records.Dir, "planned.json")); err != nil {
			http.Error(w, "no planned record before the reboot", http.StatusTeapot)
			return
		}
		got <- r.Method + " " + r.URL.Path + " async=" + r.FormValue("async") + " kexec=" + r.FormValue("kexec")
		w.Write([]byte("Rebooting\n"))
	})}
	go srv.Serve(ln)
	defer srv.Close()

	// bypassd must hear of the reboot before gokrazy does.
	bypassPlanned := make(chan string, 3)
	mux := ipc.Handler(ipc.AlwaysLive("bypassd"), func() any { return nil }, nil)
	mux.HandleFunc("POST /planned", func(w http.ResponseWriter, r *http.Request) {
		var req map[string]string
		json.NewDecoder(r.Body).Decode(&req)
		bypassPlanned <- req["kind"] + ": " + req["reason"]
		ipc.WriteJSON(w, map[string]any{})
	})
	runDir := ipctest.Serve(t, "bypassd", mux)

	g := GokrazyRebooter{RunDir: runDir, Records: records, Socket: sock}
	if err := g.Reboot(context.Background(), "test"); err != nil {
		t.Fatal(err)
	}
	if p := <-bypassPlanned; p != "reboot: test" {
		t.Fatalf("bypassd got %q", p)
	}
	if req := <-got; req != "POST /reboot async=true kexec=off" {
		t.Fatalf("gokrazy got %q", req)
	}
	var planned watchdog.PlannedRecord
	b, _ := os.ReadFile(filepath.Join(records.Dir, "planned.json"))
	if err := json.Unmarshal(b, &planned); err != nil || planned.What != "reboot" {
		t.Fatalf("planned record %s (%v)", b, err)
	}

	refuse = true
	if err := g.Reboot(context.Background(), "test"); err == nil {
		t.Fatal("a refused reboot reported success")
	}
	g.Socket = filepath.Join(dir, "nobody.sock")
	if err := g.Reboot(context.Background(), "test"); err == nil {
		t.Fatal("reboot without gokrazy reported success")
	}
	// No reboot happened: no planned record may remain to excuse a later
	// failure.
	if _, err := os.Stat(filepath.Join(records.Dir, "planned.json")); !os.IsNotExist(err) {
		t.Errorf("planned record left after failed reboots: %v", err)
	}
}
