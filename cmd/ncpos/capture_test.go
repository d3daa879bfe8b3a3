package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/internal/frames"
	"github.com/ncpos/ncpos/pcapng"
)

// TestCaptureCommand: ncpos capture asks the box with the password and
// the flags, writes what the box streams into the file, and reports a
// refusal with the box's reason, leaving no file behind.
func TestCaptureCommand(t *testing.T) {
	pcap := string(testCapture(t))
	flushed := make(chan struct{}, 1)
	var asked []forwarderapi.CaptureRequest
	args, dir := configBox(t, func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "ncpos" || p != "fw1-password-long" || r.URL.Path != "/api/v1/capture" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		if r.Method != http.MethodPost {
			t.Errorf("the command asked with %s, want POST", r.Method)
		}
		req, err := forwarderapi.ParseCaptureRequest(r.URL.Query())
		if err != nil {
			t.Errorf("the command sent %v: %v", r.URL.Query(), err)
		}
		asked = append(asked, req)
		if req.Seconds == 99 {
			// Half a block, then nothing until the client gives up.
			w.Write([]byte(pcap[:len(pcap)-7]))
			w.(http.Flusher).Flush()
			flushed <- struct{}{}
			<-r.Context().Done()
			return
		}
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

	// ^C while the box streams: the file keeps the blocks that arrived
	// whole.
	cut := filepath.Join(dir, "cut.pcapng")
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		<-flushed
		time.Sleep(200 * time.Millisecond) // for the client to take it in
		cancel()
	}()
	if err := runCapture(cctx, append(args, "-port", "LAN1", "-seconds", "99", "-w", cut)); err != nil {
		t.Fatalf("a capture cut short: %v", err)
	}
	b, err := os.ReadFile(cut)
	if err != nil || len(b) == 0 || len(b) >= len(pcap)-7 || string(b) != pcap[:len(b)] {
		t.Errorf("a capture cut short kept %d of %d bytes (%v), want its whole blocks only", len(b), len(pcap)-7, err)
	}
	if r, err := pcapng.NewReader(bytes.NewReader(b)); err == nil {
		for err == nil {
			_, err = r.Next()
		}
		if !errors.Is(err, io.EOF) {
			t.Errorf("the file of a capture cut short does not read: %v", err)
		}
	}

	bad := filepath.Join(dir, "bad.pcapng")
	err = runCapture(ctx, append(args, "-port", "LAN1", "-filter", "vlan 42 and", "-w", bad))
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
	if len(asked) != 3 {
		t.Errorf("flags the command should refuse reached the box: %+v", asked[3:])
	}
}

// testCapture is a capture of three frames.
func testCapture(t *testing.T) []byte {
	var b bytes.Buffer
	w, err := pcapng.NewWriter(&b, pcapng.SectionOptions{Application: "test"})
	if err != nil {
		t.Fatal(err)
	}
	id, err := w.AddInterface(pcapng.Interface{Name: "LAN1"})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range [][]byte{frames.ARPRequest(), frames.UDPFrame(200, 1, 2), frames.VLAN(frames.UDPFrame(100, 3, 4), 42)} {
		if err := w.WritePacket(pcapng.Packet{Interface: id, Time: time.Unix(int64(i), 0), Data: f}); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}
