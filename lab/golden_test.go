package lab_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/internal/testenv"
	"github.com/ncpos/ncpos/lab"
)

// TestReconfigureGolden has forwarderd take each configuration twice, as
// router7's netconfig tests do: what it reports doing, and the ports as
// it and the kernel then have them (segments, attach modes, MTUs, the
// programs on the interfaces, numbered as they first appear), are the
// golden file's; and a configuration taken again keeps every segment and
// leaves the ports exactly as they were.
func TestReconfigureGolden(t *testing.T) {
	l := newLab(t, 2, 1)
	cfg, write := configFile(t)
	steps := []struct{ what, text string }{
		{"seg0 and seg1", labConfig(labSeg1)},
		{"seg1's MTU raised", labConfig(labSeg1 + "mtu = 9000\n")},
		{"seg1 removed", labConfig("")},
		{"seg1 back", labConfig(labSeg1)},
	}
	write(steps[0].text)
	d := startForwarderdOn(t, l, cfg)
	progs := map[uint32]int{} // program IDs, numbered as they first appear
	var out strings.Builder
	for i, s := range steps {
		var before string
		for again := range 2 {
			fmt.Fprintf(&out, "## %s", s.what)
			if again == 1 {
				out.WriteString(", again")
			}
			out.WriteString("\n")
			if i > 0 || again > 0 {
				write(s.text)
				r, err := d.Reconfigure(context.Background())
				if err != nil {
					t.Fatalf("%s: %v", s.what, err)
				}
				fmt.Fprintf(&out, "took: kept %v, detached %v, attached %v, failed %v, restarted %v, error %q\n",
					r.Kept, r.Detached, r.Attached, r.Failed, r.Restarted, r.Error)
				if again == 1 && (len(r.Detached) > 0 || len(r.Attached) > 0 || r.Restarted) {
					t.Errorf("%s, taken again: %+v, want every segment kept", s.what, r)
				}
			}
			state := portState(t, l, d, progs)
			out.WriteString(state)
			if again == 1 && state != before {
				t.Errorf("%s, taken again, changed the ports:\n%s\nwere:\n%s", s.what, state, before)
			}
			before = state
		}
	}
	testenv.Golden(t, "reconfigure.golden", out.String())
}

// portState is forwarderd's segments and ports and the kernel's
// interfaces, the lab's names made the same in every run.
func portState(t *testing.T, l *lab.Lab, d *lab.Daemon, progs map[uint32]int) string {
	t.Helper()
	st, err := d.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	name := func(s string) string { return strings.ReplaceAll(s, l.Name(""), "lab-") }
	var lines []string
	lines = append(lines, fmt.Sprintf("engine %s, mode %s", st.Engine, st.Mode))
	for _, s := range st.Segments {
		lines = append(lines, fmt.Sprintf("segment %s: %s", s.Name, strings.Join(s.Ports[:], " ")))
	}
	ports := slices.Clone(st.Ports)
	slices.SortFunc(ports, func(a, b forwarderapi.PortStatus) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range ports {
		lines = append(lines, fmt.Sprintf("port %s: %s, segment %s, peer %s, attach %s, link %s, MTU %d, longest frame %d",
			p.Name, name(p.Interface), p.Segment, p.Peer, p.Attach, p.Link, p.MTU, p.MaxFrame))
	}
	for _, seg := range l.Segments {
		for _, ifname := range seg.Ports {
			link, err := l.FW.Link(ifname)
			if err != nil {
				t.Fatal(err)
			}
			a := link.Attrs()
			prog := "none"
			if a.Xdp != nil && a.Xdp.Attached {
				if _, ok := progs[a.Xdp.ProgId]; !ok {
					progs[a.Xdp.ProgId] = len(progs) + 1
				}
				prog = fmt.Sprintf("program %d", progs[a.Xdp.ProgId])
			}
			lines = append(lines, fmt.Sprintf("interface %s: MTU %d, %s, promiscuous %v, XDP %s", name(ifname), a.MTU, a.OperState, a.Promisc > 0, prog))
		}
	}
	return strings.Join(lines, "\n") + "\n"
}
