package vm

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/internal/tsharktest"
	"github.com/ncpos/ncpos/web/api"
)

// checkCapture captures on the box, through its API with the password,
// while lldpd sends on LAN2 (checkLLDP leaves it running): LAN1's
// outbound LLDP frames, filtered in the appliance kernel's own XDP hook,
// reach the host as pcapng that tshark reads, each forwarded from LAN2 to
// LAN1; a filter that does not compile is refused with the compiler's
// message.
func checkCapture(t *testing.T, v *VM) {
	c := configClient(v)
	ctx, cancel := context.WithTimeout(context.Background(), v.Within(time.Minute))
	defer cancel()
	_, err := c.Capture(ctx, api.CaptureRequest{Port: "LAN1", Filter: "vlan 42 and"})
	var se *api.StatusError
	if !errors.As(err, &se) || se.Code != 400 || !strings.Contains(se.Message, "filter") {
		t.Errorf("a filter that does not compile: %v, want 400 with the compiler's message", err)
	}
	start := time.Now()
	body, err := c.Capture(ctx, api.CaptureRequest{Port: "LAN1", Direction: forwarderapi.CaptureOut,
		Filter: "ether proto 0x88cc", Frames: 2, Seconds: 30})
	if err != nil {
		t.Fatalf("capture: %v", err)
	}
	defer body.Close()
	b, err := io.ReadAll(body)
	if err != nil {
		t.Fatalf("capture after %d bytes: %v", len(b), err)
	}
	file := filepath.Join(t.TempDir(), "box.pcapng")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	fields := tsharktest.Fields(t, file, "frame.interface_name", "frame.packet_flags_direction", "eth.type", "frame.verdict.ebpf_xdp", "frame.comment")
	if len(fields) != 2 {
		t.Fatalf("the capture holds %d frames, want 2: %q", len(fields), fields)
	}
	for i, f := range fields {
		if want := []string{"LAN1", "0x00000002", "0x88cc", "4", "LAN1 out: entered LAN2, forwarded to LAN1"}; strings.Join(f, "\t") != strings.Join(want, "\t") {
			t.Errorf("frame %d: tshark reads %q, want %q", i+1, f, want)
		}
	}
	t.Logf("captured 2 LLDP frames leaving LAN1 in %v (%d bytes of pcapng)", time.Since(start).Round(100*time.Millisecond), len(b))
}
