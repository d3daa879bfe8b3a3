package vm

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/image"
	"github.com/ncpos/ncpos/internal/frames"
	"github.com/ncpos/ncpos/web/api"
)

// wireConfig is the default configuration with a second segment: seg1
// joins LAN1 and LAN2, seg2 LAN3 and LAN4, each behind its sim relay.
func wireConfig() []byte {
	return []byte(strings.Replace(string(config.DefaultTOML()), "\n[[segment]]", "\n[[segment]]\nname = \"seg2\"\nports = [\"LAN3\", \"LAN4\"]\nbypass = \"pair2\"\n\n[[segment]]", 1))
}

// cable is the host's end of a data port's wire: a UDP socket on loopback
// that QEMU sends the port's frames to, and the port QEMU takes frames on.
type cable struct {
	conn  *net.UDPConn
	guest *net.UDPAddr
}

func newCables(t *testing.T, n int) ([]cable, []Wire) {
	t.Helper()
	cables := make([]cable, n)
	wires := make([]Wire, n)
	for i := range cables {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		// A free port for QEMU's end, released just before QEMU binds it.
		g, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		ga := g.LocalAddr().(*net.UDPAddr)
		g.Close()
		cables[i] = cable{conn: c, guest: ga}
		wires[i] = Wire{Host: c.LocalAddr().(*net.UDPAddr).Port, Guest: ga.Port}
	}
	return cables, wires
}

func (c cable) send(f []byte) error {
	_, err := c.conn.WriteToUDP(f, c.guest)
	return err
}

// TestWireOnIntelPorts boots the default image with LAN1 to LAN3 as
// Intel 82574L ports (QEMU's e1000e, whose driver strips VLAN tags in
// hardware while offload is on) and LAN4 as virtio, each cabled to a
// UDP socket of the test: seg1 pairs two e1000e, seg2 an e1000e with a
// virtio port, all four native (ncpos's kernel gives e1000e native XDP).
// Every frame a cable carries crosses both segments both ways
// bit for bit, the ports' settings are as forwarderd set them, bursts and
// frames the 82574L drops on transmit raise no tx_stalled while stopping
// LAN2's transmit unit does, an attacker on LAN1 gets no answer while
// the box boots, while it forwards and after forwarderd is killed, and
// the guest's kernel warns of nothing.
func TestWireOnIntelPorts(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	img := testImage(t, "wire", wireConfig(), image.Program{Pkg: "github.com/ncpos/ncpos/vm/hangctl", Path: "/user/test/hangctl"})
	cables, wires := newCables(t, 4)
	att := &attacker{lan: cables[0], mac: WireMAC(1)}
	att.start("booting")
	defer att.stop()
	v, serial := boot(t, img, false, func(o *Options) {
		o.DataModels = []string{"e1000e", "e1000e", "e1000e", "virtio-net-pci"}
		o.Wires = wires
	})
	waitForwardingNormally(t, v, 5*time.Minute, "seg1", "seg2")
	att.window("forwarding")
	time.Sleep(3 * time.Second)
	att.stop() // the wire test reads LAN1's cable itself

	var ports struct{ Ports []api.Port }
	getAPI(t, v, "api/v1/ports", &ports)
	checkWirePorts(t, ports.Ports)

	crossWireSet(t, cables)

	checkNoFalseStall(t, v, cables[0], cables[1])
	lan2 := slices.IndexFunc(ports.Ports, func(p api.Port) bool { return p.Name == "LAN2" })
	if lan2 < 0 {
		t.Fatalf("no LAN2 among the ports: %+v", ports.Ports)
	}
	checkRealStall(t, v, cables[0], &ports.Ports[lan2])

	resp, err := http.Post(hangctlURL(v)+"kill?daemon=forwarderd", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	att.start("forwarderd killed")
	time.Sleep(5 * time.Second)
	att.stop()
	t.Logf("attacker probes sent: %v", att.sentBy())
	for _, a := range att.answers() {
		t.Errorf("the box answered the attacker on LAN1 (%s): % x", a.window, a.frame)
	}
	// Native XDP on e1000e, its transmit stopped and started, and its
	// programs detached by the kill: the kernel warned of nothing.
	noKernelTrouble(t, serial)
}

// checkWirePorts wants the ports with VLAN stripping off (the e1000e
// ports; virtio has none) and every program native: ncpos's kernel gives
// e1000e native XDP, and each port's peer transmits what it redirects
// once its own program is attached (e1000e, and virtio with its XDP
// queues).
func checkWirePorts(t *testing.T, ports []api.Port) {
	t.Helper()
	seen := 0
	for _, p := range ports {
		d := p.Datapath
		if p.Role != "data" || d == nil {
			continue
		}
		seen++
		t.Logf("%s (%s): %s (%s), MTU %d, frames up to %d, settings %+v", p.Name, p.Interface, d.Attach, d.AttachWhy, d.MTU, d.MaxFrame, d.Settings)
		if d.MTU != config.DefaultMTU {
			t.Errorf("%s: MTU %d, want %d", p.Name, d.MTU, config.DefaultMTU)
		}
		results := map[string]string{}
		for _, s := range d.Settings {
			results[s.Name] = s.Result + "/" + s.Got
		}
		if p.Name != "LAN4" {
			if r := results["rx-vlan-hw-parse"]; r != "set/off" && r != "already/off" {
				t.Errorf("%s: rx-vlan-hw-parse %q, want off", p.Name, r)
			}
		}
		if d.Attach != "native" {
			t.Errorf("%s: attached %s (%s), want native", p.Name, d.Attach, d.AttachWhy)
		}
	}
	if seen != 4 {
		t.Errorf("%d data ports with datapath information, want 4", seen)
	}
}

// crossWireSet sends the wire set of frames (frames.WireFrames) through
// both segments both ways, LAN1 to LAN2 and LAN3 to LAN4 and back, and
// wants every frame out of the other cable bit for bit, and nothing more.
func crossWireSet(t *testing.T, cables []cable) {
	t.Helper()
	named := frames.WireFrames(0)
	names := make([]string, 0, len(named))
	for n := range named {
		names = append(names, n)
	}
	slices.Sort(names)
	var sent [][]byte
	for _, n := range names {
		sent = append(sent, named[n])
	}
	for _, dir := range [][2]int{{0, 1}, {1, 0}, {2, 3}, {3, 2}} {
		got := crossWire(t, cables[dir[0]], cables[dir[1]], sent)
		for i, n := range names {
			switch {
			case i >= len(got):
				t.Errorf("LAN%d to LAN%d: %s did not arrive", dir[0]+1, dir[1]+1, n)
			case !bytes.Equal(got[i], sent[i]):
				t.Errorf("LAN%d to LAN%d: %s changed:\n sent % x\n  got % x", dir[0]+1, dir[1]+1, n, sent[i], got[i])
			}
		}
		if len(got) > len(sent) {
			t.Errorf("LAN%d to LAN%d: %d frames more than sent, the first % x", dir[0]+1, dir[1]+1, len(got)-len(sent), got[len(sent)])
		}
		t.Logf("LAN%d to LAN%d: %d of %d frames arrived", dir[0]+1, dir[1]+1, min(len(got), len(sent)), len(sent))
	}
}

// crossWire sends frames into one cable and returns what comes out of the
// other within 10 s (or once as many arrived, and half a second more).
func crossWire(t *testing.T, from, to cable, sent [][]byte) [][]byte {
	t.Helper()
	drain(to.conn)
	for _, f := range sent {
		if err := from.send(f); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	var got [][]byte
	buf := make([]byte, 65536)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		to.conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, _, err := to.conn.ReadFromUDP(buf)
		if err != nil {
			continue
		}
		got = append(got, bytes.Clone(buf[:n]))
		if len(got) == len(sent) {
			deadline = time.Now().Add(500 * time.Millisecond)
		}
	}
	return got
}

func drain(c *net.UDPConn) {
	buf := make([]byte, 65536)
	for {
		c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, _, err := c.ReadFromUDP(buf); err != nil {
			return
		}
	}
}

// guestAddr is the management address QEMU's user networking gives the
// box, which the attacker knows.
var guestAddr = [4]byte{10, 0, 2, 15}

// attacker sits on LAN1's cable: every 200 ms it asks for the management
// address by ARP, sends a TCP SYN to statusd's port and asks by ND for the
// management port's link-local address and LAN1's, and it keeps every
// frame that answers, with the window it came in.
type attacker struct {
	lan  cable
	mac  net.HardwareAddr
	mu   sync.Mutex
	win  string
	sent map[string]int
	got  []answer
	done chan struct{}
	wg   sync.WaitGroup
}

type answer struct {
	window string
	frame  []byte
}

func (a *attacker) start(window string) {
	a.win, a.done = window, make(chan struct{})
	if a.sent == nil {
		a.sent = map[string]int{}
	}
	a.wg.Add(2)
	go a.probe()
	go a.listen()
}

func (a *attacker) window(w string) { a.mu.Lock(); a.win = w; a.mu.Unlock() }

func (a *attacker) stop() {
	select {
	case <-a.done:
	default:
		close(a.done)
	}
	a.wg.Wait()
}

func (a *attacker) sentBy() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sent
}

func (a *attacker) answers() []answer {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.got
}

var evil = [4]byte{10, 0, 2, 66}

// The attacker's IPv6 address, and the management port's link-local
// address (QEMU gives it MAC 52:54:00:12:34:56).
var (
	evil6   = netip.MustParseAddr("fe80::66")
	guestLL = netip.MustParseAddr("fe80::5054:ff:fe12:3456")
)
var evilMAC = [6]byte{0x02, 0x66, 0x66, 0x66, 0x66, 0x66}

func (a *attacker) probe() {
	defer a.wg.Done()
	arpFrame := frames.ARPWhoHas(evilMAC, netip.AddrFrom4(evil), netip.AddrFrom4(guestAddr))
	synFrame := frames.TCPSYN([6]byte(a.mac), evilMAC, netip.AddrFrom4(evil), netip.AddrFrom4(guestAddr), 40000, 80)
	// Neighbour solicitations for the management port's link-local
	// address and for the one LAN1 would have with IPv6 on.
	nsFrames := [][]byte{
		frames.NeighborSolicitationFrom(evilMAC, evil6, guestLL),
		frames.NeighborSolicitationFrom(evilMAC, evil6, frames.LinkLocal([6]byte(a.mac))),
	}
	for {
		select {
		case <-a.done:
			return
		case <-time.After(200 * time.Millisecond):
		}
		a.mu.Lock()
		win := a.win
		a.mu.Unlock()
		a.lan.send(arpFrame)
		a.lan.send(synFrame)
		for _, f := range nsFrames {
			a.lan.send(f)
		}
		a.mu.Lock()
		a.sent[win]++
		a.mu.Unlock()
	}
}

// listen keeps what arrives on LAN1's cable that answers the attacker:
// an ARP reply, anything IPv4 or IPv6 to the attacker's addresses (a
// SYN-ACK, a reset, a neighbour advertisement), or anything from LAN1's
// own MAC (the box speaking on a data port).
func (a *attacker) listen() {
	defer a.wg.Done()
	buf := make([]byte, 65536)
	for {
		select {
		case <-a.done:
			return
		default:
		}
		a.lan.conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		n, _, err := a.lan.conn.ReadFromUDP(buf)
		if err != nil {
			continue
		}
		f := buf[:n]
		a.mu.Lock()
		win := a.win
		a.mu.Unlock()
		if len(f) < 14 {
			continue
		}
		et := binary.BigEndian.Uint16(f[12:])
		arpReply := et == 0x0806 && len(f) >= 22 && binary.BigEndian.Uint16(f[20:]) == 2
		toEvil := et == 0x0800 && len(f) >= 34 && [4]byte(f[30:34]) == evil
		toEvil6 := et == 0x86dd && len(f) >= 54 && [16]byte(f[38:54]) == evil6.As16()
		fromPort := bytes.Equal(f[6:12], a.mac)
		if arpReply || toEvil || toEvil6 || fromPort {
			a.mu.Lock()
			a.got = append(a.got, answer{win, bytes.Clone(f)})
			a.mu.Unlock()
		}
	}
}
