package bypass

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/ipc"
)

// A forwarderd that does not answer is reported with the timeout as
// people write it: "667ms", not "666.666666ms" (a 2 s budget's third).
func TestProbeTimeoutReadsAsWritten(t *testing.T) {
	dir, err := os.MkdirTemp("", "ncpt-probe-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ln, err := net.Listen("unix", ipc.SocketPath(dir, "forwarderd"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	v := newForwarderProber(dir, 2*time.Second/3).Probe(context.Background())
	if !strings.Contains(v.Err, "did not answer within 667ms") {
		t.Errorf("probe of a silent forwarderd: %q, want it to say 667ms", v.Err)
	}
}
