package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/forwarder/forwarderapi"
)

// TestCaptureCommand: ncpos capture asks the box with the password and
// the flags, writes what the box streams into the file, and reports a
// refusal with the box's reason, leaving no file behind.
func TestCaptureCommand(t *testing.T) {
	const pcap = "pcapng bytes as the box streams them"
	var asked []forwarderapi.CaptureRequest
	args, dir := configBox(t, func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "ncpos" || p != "fw1-password-long" || r.URL.Path != "/api/v1/capture" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		req, err := forwarderapi.ParseCaptureRequest(r.URL.Query())
		if err != nil {
			t.Errorf("the command sent %v: %v", r.URL.Query(), err)
		}
		asked = append(asked, req)
		if req.Filter == "vlan 42 and" {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]string{"error": `filter: at 11: expected a primitive after "and"`})
			return
		}
		w.Header().Set("Content-Type", forwarderapi.CaptureContentType)
		w.Write([]byte(pcap))
	})
	out := filepath.Join(dir, "cap.pcapng")
	ctx := context.Background()
	if err := runCapture(ctx, append(args, "-port", "LAN1", "-direction", "both", "-filter", "vlan 42", "-seconds", "5", "-w", out)); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != pcap {
		t.Errorf("%s holds %q (%v), want what the box sent", out, b, err)
	}
	want := forwarderapi.CaptureRequest{Port: "LAN1", Direction: "both", Filter: "vlan 42", Seconds: 5, Snaplen: forwarderapi.CaptureMaxSnaplen}
	if len(asked) != 1 || asked[0] != want {
		t.Errorf("the box was asked %+v, want %+v", asked, want)
	}

	bad := filepath.Join(dir, "bad.pcapng")
	err := runCapture(ctx, append(args, "-port", "LAN1", "-filter", "vlan 42 and", "-w", bad))
	if err == nil || !strings.Contains(err.Error(), `expected a primitive after "and"`) {
		t.Errorf("a refused capture: %v, want the box's reason", err)
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("a refused capture left %s behind", bad)
	}
	for _, a := range [][]string{
		{"-port", "LAN1"},
		{"-w", out},
		{"-port", "LAN1", "-w", out, "-seconds", "0"},
		{"-port", "LAN1", "-w", out, "-direction", "up"},
	} {
		if err := runCapture(ctx, append(append([]string{}, args...), a...)); err == nil {
			t.Errorf("%v: no error", a)
		}
	}
	if len(asked) != 2 {
		t.Errorf("flags the command should refuse reached the box: %+v", asked[2:])
	}
}
