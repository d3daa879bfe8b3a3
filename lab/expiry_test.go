package lab_test

import (
	"context"
	"testing"
	"time"

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
