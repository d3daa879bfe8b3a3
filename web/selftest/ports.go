package selftest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/ncpos/ncpos/bench"
)

// testPort is one test port of a self-test run: its front-panel name, its
// interface and the segment port it is cabled to.
type testPort struct {
	name, ifname, cabledTo string
}

// testPorts lists the test ports of streams, senders and receivers, in
// stream order.
func (s *selfTester) testPorts(streams []bench.PortStream) []testPort {
	byIf := map[string]testPort{}
	for _, p := range s.config().SelfTestPaths() {
		for _, stream := range streams {
			if stream.Name != p.Segment {
				continue
			}
			byIf[stream.Sender.Ifname] = testPort{name: p.Sender, ifname: stream.Sender.Ifname, cabledTo: p.From}
			byIf[stream.Receiver.Ifname] = testPort{name: p.Receiver, ifname: stream.Receiver.Ifname, cabledTo: p.To}
		}
	}
	var out []testPort
	for _, stream := range streams {
		for _, ifname := range []string{stream.Sender.Ifname, stream.Receiver.Ifname} {
			out = append(out, byIf[ifname])
		}
	}
	return out
}

// portBusy says why ifname is in use by something else: an XDP program that
// is not the self-test's (its own are detached when a run ends).
func portBusy(ifname string) error {
	l, err := netlink.LinkByName(ifname)
	if err != nil {
		return err
	}
	if x := l.Attrs().Xdp; x != nil && x.Attached {
		return fmt.Errorf("an XDP program (id %d) is attached to it", x.ProgId)
	}
	return nil
}

// bringUp brings a test port's link up, so that it can find its carrier.
func bringUp(ifname string) error {
	l, err := netlink.LinkByName(ifname)
	if err != nil {
		return err
	}
	if err := netlink.LinkSetUp(l); err != nil {
		return fmt.Errorf("%s up: %w", ifname, err)
	}
	return nil
}

// waitCarrier waits up to within for every port to have its link, and
// names the ones that do not: a test port without link is not cabled, its
// segment port is down, or a bypass relay cuts it off (which the emulated
// relays show as dormant), and a run would only measure loss.
func waitCarrier(ctx context.Context, sysClassNet string, ports []testPort, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		var down []string
		for _, tp := range ports {
			b, err := os.ReadFile(filepath.Join(sysClassNet, tp.ifname, "carrier"))
			oper, _ := os.ReadFile(filepath.Join(sysClassNet, tp.ifname, "operstate"))
			if err != nil || strings.TrimSpace(string(b)) != "1" || strings.TrimSpace(string(oper)) == "dormant" {
				down = append(down, fmt.Sprintf("%s (%s), cabled to %s", tp.name, tp.ifname, tp.cabledTo))
			}
		}
		if len(down) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("test port %s: no link after %v; check the cable and that the segment port is up", strings.Join(down, "; "), within)
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), fmt.Errorf("waiting for the link of %s", strings.Join(down, "; ")))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
