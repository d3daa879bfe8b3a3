package forwarder_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/forwarder"
	"github.com/ncpos/ncpos/internal/frames"
	"github.com/ncpos/ncpos/internal/tsharktest"
)

const xdpDrop, dropNoPeer = 1, 0

// captureTester is a program tester with a capture of filter (snaplen 0:
// whole frames) hooked in, both closed when the test ends.
func captureTester(t *testing.T, filter string, snaplen int) (*forwarder.ProgramTester, *forwarder.Capture) {
	t.Helper()
	requireRoot(t)
	pt, err := forwarder.NewProgramTester()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pt.Close() })
	c, err := pt.StartCapture(filter, snaplen)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return pt, c
}

// TestCaptureInKernel hooks a capture into a port program and runs frames
// through it under BPF_PROG_RUN, where the egress slot is empty, so the
// program drops each frame: the capture gets every frame whole, with its
// length, the drop and its reason, and its malformations.
func TestCaptureInKernel(t *testing.T) {
	pt, c := captureTester(t, "", 0)
	var sent [][]byte
	for _, f := range frames.WireFrames(9000) {
		sent = append(sent, f)
	}
	for _, mc := range frames.MalformedCases() {
		sent = append(sent, mc.Frame)
	}
	for i, f := range sent {
		if _, err := pt.Run(f); err != nil {
			t.Fatal(err)
		}
		got, err := c.NextFrame(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if got == nil {
			t.Fatalf("frame %d (%d bytes) not captured", i, len(f))
		}
		if !bytes.Equal(got.Data, f) || int(got.Len) != len(f) {
			t.Errorf("frame %d: captured %d of %d bytes, differing:\n sent %.64x\n  got %.64x", i, len(got.Data), got.Len, f, got.Data)
		}
		if got.Act != xdpDrop || got.Drop != dropNoPeer {
			t.Errorf("frame %d: verdict %d, drop %d; want XDP_DROP for no_peer", i, got.Act, got.Drop)
		}
		if want := forwarder.ParseFrame(f).Malformed; got.Malformed != want {
			t.Errorf("frame %d: malformations %#x, the parser says %#x", i, got.Malformed, want)
		}
	}
	n, err := c.Counts()
	if err != nil {
		t.Fatal(err)
	}
	if n.Seen != uint64(len(sent)) || n.Matched != n.Seen || n.Captured != n.Seen || n.OverRate+n.RingFull != 0 {
		t.Errorf("counts %+v, want all %d seen, matched and captured", n, len(sent))
	}
	c.Close()
	// Without the capture, the program still runs.
	if _, err := pt.Run(sent[0]); err != nil {
		t.Fatal(err)
	}
}

// TestCaptureFilterInKernel: the filter runs in the kernel, so only the
// frames it keeps reach the ring, cut to the snap length.
func TestCaptureFilterInKernel(t *testing.T) {
	pt, c := captureTester(t, "vlan 42", 64)
	udp := frames.UDPFrame(200, 1, 2)
	keep := [][]byte{frames.VLAN(udp, 42), frames.QinQ(udp, 42, 7), frames.VLAN(frames.UDPFrame(1500, 3, 4), 42)}
	drop := [][]byte{udp, frames.VLAN(udp, 7), frames.QinQ(udp, 7, 42), frames.ARPRequest()}
	for _, f := range append(append([][]byte{}, drop...), keep...) {
		if _, err := pt.Run(f); err != nil {
			t.Fatal(err)
		}
	}
	for i, f := range keep {
		got, err := c.NextFrame(time.Second)
		if err != nil || got == nil {
			t.Fatalf("kept frame %d: %v, %v", i, got, err)
		}
		if !bytes.Equal(got.Data, f[:min(64, len(f))]) || int(got.Len) != len(f) {
			t.Errorf("kept frame %d: got %d bytes of %d, want the first 64 of %d:\n%x", i, len(got.Data), got.Len, len(f), got.Data)
		}
	}
	if extra, _ := c.NextFrame(100 * time.Millisecond); extra != nil {
		t.Errorf("a frame the filter should have left out reached the ring: %x", extra.Data)
	}
	n, _ := c.Counts()
	if n.Seen != uint64(len(keep)+len(drop)) || n.Matched != uint64(len(keep)) {
		t.Errorf("counts %+v: want %d seen, %d matched", n, len(keep)+len(drop), len(keep))
	}
}

// TestCaptureRateCap: frames past the cap are counted, not captured, and
// every matched frame is accounted for.
func TestCaptureRateCap(t *testing.T) {
	pt, c := captureTester(t, "udp", 0)
	const runs = 3 * forwarder.CaptureMaxFramesPerSecond / 2
	start := time.Now()
	if err := pt.RunRepeat(frames.UDPFrame(60, 1, 2), runs); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	n, err := c.Counts()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d frames in %v: %+v", runs, took, n)
	if n.Matched != runs || n.Captured+n.OverRate+n.RingFull != n.Matched {
		t.Errorf("counts %+v do not account for the %d frames", n, runs)
	}
	// Within one second the cap must have cut in; runs that took longer
	// (a loaded host) may have spread over two of the cap's seconds.
	seconds := uint64(took/time.Second) + 1
	if n.Captured > seconds*forwarder.CaptureMaxFramesPerSecond || (took < 900*time.Millisecond && n.OverRate == 0) {
		t.Errorf("%d frames captured in %v with %d over the cap of %d frames/s", n.Captured, took, n.OverRate, forwarder.CaptureMaxFramesPerSecond)
	}
}

// TestCaptureDropsInPcapng: frames the program drops reach the pcapng
// with their reason, as Debian's tshark reads it: the XDP verdict, and a
// comment naming the drop and any malformation.
func TestCaptureDropsInPcapng(t *testing.T) {
	pt, c := captureTester(t, "", 0)
	sent := [][]byte{frames.UDPFrame(100, 1, 2), frames.MalformedCases()[0].Frame}
	c.AsPort("LAN1", "seg1", "LAN2", 30, len(sent))
	var out bytes.Buffer
	done := make(chan error)
	go func() {
		_, err := c.Stream(context.Background(), &out, nil)
		done <- err
	}()
	for _, f := range sent {
		if _, err := pt.Run(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "drops.pcapng")
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got := tsharktest.Fields(t, file, "frame.interface_name", "frame.verdict.ebpf_xdp", "frame.comment")
	mal := "malformed: " + strings.Join(frames.MalformedCases()[0].Reasons, ", ")
	want := [][]string{{"LAN1", "1", "LAN1 in: dropped: no_peer"}, {"LAN1", "1", "LAN1 in: dropped: no_peer|" + mal}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tshark reads\n%q\nwant\n%q", got, want)
	}
}
