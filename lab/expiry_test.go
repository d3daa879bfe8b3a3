package lab_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/forwarder"
	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/internal/frames"
)

// TestFlowExpiry wants service mode's flows gone once idle for longer
// than -flow-idle, counted as expired, not evicted.
func TestFlowExpiry(t *testing.T) {
	for _, engine := range []string{forwarder.EngineXDP, forwarder.EngineAFXDP} {
		t.Run(engine, func(t *testing.T) {
			l := newLab(t, 1, 1)
			attachSinks(t, l, false) // a veth drops redirected frames unless its peer has XDP
			d := startForwarderd(t, l, "-engine", engine, "-mode", "service",
				"-flow-table-size", "4096", "-flow-idle", "1s", "-flow-sweep", "200ms")
			snd := sender(t, l)
			const n = 20
			for i := 0; i < n; i++ {
				if err := snd.Send(frames.UDPFrame(64, uint16(5000+i), 53)); err != nil {
					t.Fatal(err)
				}
			}
			var fs forwarderapi.FlowStats
			deadline := time.Now().Add(6 * time.Second)
			for {
				st, err := d.Status(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				fs = *st.Flows
				if (fs.Created == n && fs.Flows == 0) || time.Now().After(deadline) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if fs.Created != n || fs.Flows != 0 || fs.Expired != n || fs.Evicted != 0 {
				t.Errorf("after idling: %d created, %d flows, %d expired, %d evicted; want %d, 0, %d, 0",
					fs.Created, fs.Flows, fs.Expired, fs.Evicted, n, n)
			}
		})
	}
}

// TestFlowAcrossCPUs sends one TCP flow's frames from both CPUs in turn,
// so that each CPU keeps its own share of the flow, and wants the flow
// once, with every frame, byte and TCP flag of both shares.
func TestFlowAcrossCPUs(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU")
	}
	l := newLab(t, 1, 1)
	sinks := attachSinks(t, l, false)
	d := startForwarderd(t, l, "-engine", "xdp", "-mode", "service", "-flow-sweep", "200ms")
	snd := sender(t, l)
	tcp := func(flags byte) []byte {
		return frames.Ethernet(frames.MACB, frames.MACA, 0x0800, frames.IPv4(frames.AddrA, frames.AddrB, 6, frames.TCP(40000, 443, flags, nil)))
	}
	syn, ack := tcp(0x02), tcp(0x10)
	const n = 100
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread's affinity goes with it
		var err error
		for i := 0; i < n && err == nil; i++ {
			// A veth's NAPI runs where the frame was sent from.
			var set unix.CPUSet
			set.Set(i % 2)
			if err = unix.SchedSetaffinity(0, &set); err == nil {
				frame := syn
				if i%2 == 1 {
					frame = ack
				}
				err = snd.Send(frame)
			}
		}
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var fs forwarderapi.FlowStats
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		st := mustStatus(t, d)
		fs = *st.Flows
		if (len(fs.Top) > 0 && fs.Top[0].Packets == n) || time.Now().After(deadline) {
			break
		}
	}
	if arrived, _, _ := sinks.Count(0, 1); arrived != n {
		t.Fatalf("%d of %d frames arrived", arrived, n)
	}
	if fs.Created != 1 || fs.Flows != 1 || len(fs.Top) != 1 {
		t.Fatalf("flows: %d created, %d in the table, top %+v; want one", fs.Created, fs.Flows, fs.Top)
	}
	f := fs.Top[0]
	if f.Packets != n || f.Bytes != n*uint64(len(syn)) || f.TCPFlags != 0x12 || f.SrcPort != 40000 || f.DstPort != 443 {
		t.Errorf("the flow: %d packets, %d bytes, flags %#x, ports %d -> %d; want %d, %d, 0x12, 40000 -> 443",
			f.Packets, f.Bytes, f.TCPFlags, f.SrcPort, f.DstPort, n, n*len(syn))
	}
	if f.LastSeen.Before(f.FirstSeen) || time.Since(f.FirstSeen) > time.Minute {
		t.Errorf("the flow seen first %v, last %v", f.FirstSeen, f.LastSeen)
	}
}
