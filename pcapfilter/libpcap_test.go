package pcapfilter

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/bpf"

	"github.com/ncpos/ncpos/internal/testenv"
)

// The differential test compiles each expression with libpcap too, by
// asking tcpdump for its program (-ddd) on a capture file of link type
// Ethernet, where VLAN tags are in the frame as on the box, and runs both
// programs over the corpus: they must accept and reject the same frames.

var expressions = []string{
	"",
	// protocols
	"ip", "ip6", "arp", "rarp", "tcp", "udp", "icmp", "icmp6", "sctp", "igmp",
	"ah", "esp", "pim", "vrrp", "carp", "igrp", "stp", "iso", "netbeui",
	"ip proto 50", "ip6 proto 17", "proto 47", `ip proto \tcp`, `ip6 proto \ipv6-icmp`, "ip6 proto 44",
	"ip proto 6 or 17", "proto 0x84",
	`ether proto 0x88cc`, `ether proto \arp`, `ether proto \ip6`, "ether proto 100", `ether proto \stp`,
	`ether proto \iso`, "ether proto 6", `ether proto \loopback`, `ether proto \netbeui`, "ether proto 1500", "ether proto 1501",
	// link layer
	"ether host 02:00:00:00:00:01", "ether src 02:00:00:00:00:02", "ether dst 01:80:c2:00:00:0e",
	"ether src and dst 02:00:00:00:00:01", "ether dst host 02-00-00-00-00-02", "ether host 0200.0000.0001",
	"ether broadcast", "ether multicast", "broadcast", "multicast", "ip multicast", "ip6 multicast",
	"ether multicast and not ether broadcast", "link src 2:0:0:0:0:1",
	// hosts and nets
	"host 10.0.0.1", "src host 10.0.0.1", "dst host 10.0.0.2", "src or dst host 192.168.1.5",
	"src and dst host 10.0.0.1", "ip host 10.0.0.1", "arp host 10.0.0.1", "rarp src host 10.0.0.1",
	"arp dst host 10.0.0.1", "host 10.0.0.1 or 192.168.1.5", "src 10.0.0.1", "ip dst 10.0.0.2",
	"host 2001:db8::1", "ip6 host 2001:db8::2", "src host ::1", "dst host ff02::1", "ip6 src 2001:db8::1",
	"host 10.1", "host 80", "host 10.0.0.1 or ::1", "host 10.0.0.1 and not 10.0.0.2",
	"net 10.0.0.0/8", "net 10.0.0.0 mask 255.0.0.0", "src net 192.168.0.0/16", "dst net 10.0.0.0/24",
	"net 2001:db8::/32", "ip6 net 2001:db8:2000::/35", "src net 2001:db8::/64", "net 0.0.0.0/0", "net ::/0",
	"net 10", "net 192.168", "net 10.0.0.0/8 or 192.168.0.0/16", "arp net 10.0.0.0/30", "dst or src net 224.0.0.0/4",
	"net 10.0.0.0 mask 255.255.0.255",
	// ports
	"port 80", "tcp port 80", "udp port 53", "src port 22", "dst port 80", "tcp dst port 80 or 443",
	"portrange 10-20", "tcp src portrange 1-1024", "udp portrange 60-70", "portrange 443-80", "portrange 80",
	"sctp port 80", "port 80 and not 443", "src and dst port 80", "udp port 53 or 67", "tcp src or dst port 80",
	"port 010", "tcp portrange 0-65535",
	// vlan
	"vlan", "vlan 42", "vlan 7", "vlan 0", "vlan 42 and host 10.0.0.1", "vlan and vlan 7", "vlan 100 and vlan 7 and ip",
	"vlan 42 and tcp port 80", "vlan and arp", "not vlan and ip", "vlan 42 or host 10.0.0.1", "vlan and ip6 and udp port 53",
	"vlan and vlan", "vlan 7 and vlan 42 and udp", "vlan and ether proto 100", "vlan and (ip or ip6)",
	"vlan 42 and mpls 100 and ip", "ether host 02:00:00:00:00:01 and vlan 42",
	// mpls
	"mpls", "mpls 100", "mpls 100 and ip", "mpls and mpls 100 and ip", "mpls and ip6", "mpls and tcp port 80",
	"mpls and host 10.0.0.1", "mpls 200 and mpls 100", "mpls and net 10.0.0.0/8", "mpls 100 and udp",
	"mpls and ether proto \\ip", "mpls and ip6 host 2001:db8::2",
	// lengths
	"less 60", "greater 100", "len > 100", "len <= 64", "len != 60", "len == 14", "len >= 20", "len = 60", "len < 61",
	// combinations
	"not (tcp port 22 or arp)", "ip6 and udp port 53", "tcp and (port 80 or port 443) and not host 10.0.0.9",
	"!arp && !(ip6 || vlan)", "host 10.0.0.1 and (10.0.0.2 or 192.168.1.5)", "host 10.0.0.1 and (port 80) and 10.0.0.2",
	"icmp or icmp6 or igmp", "ip and not tcp", "(tcp or udp) and src net 10.0.0.0/8 and dst port 80",
	"tcp or udp and port 53", "not not ip", "not ip6 and not arp", "ether proto 0x88cc or stp or vlan",
	"greater 60 and (ip or arp)", "port 80 or host 2001:db8::1 or vlan", "udp and not port 53 and not port 67",
	// number and address forms
	"ip6 net 2001:DB8::/32", "ether host 02:00:00:00:00:01 or 02:00:00:00:00:02", "port 0x50", "vlan 0x2a",
	"host 0x0a000001", "ether src 2:0:0:0:0:1 or ether dst 02:00:00:00:00:01",
}

// manyPorts is long enough that jumps past 255 instructions need
// trampolines, in both compilers' programs.
func manyPorts() string {
	var b strings.Builder
	b.WriteString("tcp dst port 1000")
	for p := 1001; p < 1150; p++ {
		fmt.Fprintf(&b, " or %d", p)
	}
	return b.String()
}

// findTcpdump is Debian's tcpdump, whose libpcap compiles the programs
// the differential tests hold ours to (scripts/deps.sh installs it).
func findTcpdump(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/sbin/tcpdump", "/usr/bin/tcpdump"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return testenv.LookPath(t, testenv.Tools, "tcpdump", "tcpdump")
}

// emptyPcap writes a capture file with no packets, of link type Ethernet.
func emptyPcap(t *testing.T) string {
	h := make([]byte, 24)
	binary.LittleEndian.PutUint32(h[0:], 0xa1b2c3d4)
	binary.LittleEndian.PutUint16(h[4:], 2)
	binary.LittleEndian.PutUint16(h[6:], 4)
	binary.LittleEndian.PutUint32(h[16:], 262144)
	binary.LittleEndian.PutUint32(h[20:], 1) // LINKTYPE_ETHERNET
	path := filepath.Join(t.TempDir(), "empty.pcap")
	if err := os.WriteFile(path, h, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// libpcapProgram is libpcap's program for expr: tcpdump -ddd prints the
// instruction count, then each instruction as "code jt jf k" in decimal.
func libpcapProgram(tcpdump, pcap, expr string) ([]bpf.Instruction, error) {
	args := []string{"-ddd", "-r", pcap}
	if expr != "" {
		args = append(args, expr)
	}
	cmd := exec.Command(tcpdump, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("tcpdump %q: %v: %s", expr, err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	n, err := strconv.Atoi(lines[0])
	if err != nil || n != len(lines)-1 {
		return nil, fmt.Errorf("tcpdump %q: unexpected output %q", expr, out)
	}
	var prog []bpf.Instruction
	for _, l := range lines[1:] {
		var v [4]uint32
		f := strings.Fields(l)
		if len(f) != 4 {
			return nil, fmt.Errorf("tcpdump %q: bad line %q", expr, l)
		}
		for i := range f {
			x, err := strconv.ParseUint(f[i], 10, 32)
			if err != nil {
				return nil, fmt.Errorf("tcpdump %q: bad line %q", expr, l)
			}
			v[i] = uint32(x)
		}
		raw := bpf.RawInstruction{Op: uint16(v[0]), Jt: uint8(v[1]), Jf: uint8(v[2]), K: v[3]}
		prog = append(prog, raw.Disassemble())
	}
	return prog, nil
}

func listing(prog []bpf.Instruction) string {
	var b strings.Builder
	for i, ins := range prog {
		fmt.Fprintf(&b, "  (%03d) %v\n", i, ins)
	}
	return b.String()
}

func accepts(t *testing.T, vm *bpf.VM, frame []byte) bool {
	t.Helper()
	n, err := vm.Run(frame)
	if err != nil {
		t.Fatalf("running the program: %v", err)
	}
	return n != 0
}

func TestMatchesLibpcap(t *testing.T) {
	tcpdump := findTcpdump(t)
	pcap := emptyPcap(t)
	samples := corpus()
	exprs := append(expressions, manyPorts())
	compared, accepted := 0, 0
	for _, expr := range exprs {
		ours, err := Compile(expr)
		if err != nil {
			t.Errorf("Compile(%q): %v", expr, err)
			continue
		}
		theirs, err := libpcapProgram(tcpdump, pcap, expr)
		if err != nil {
			t.Error(err)
			continue
		}
		ourVM, err := bpf.NewVM(ours)
		if err != nil {
			t.Errorf("Compile(%q): the program does not load: %v\n%s", expr, err, listing(ours))
			continue
		}
		theirVM, err := bpf.NewVM(theirs)
		if err != nil {
			t.Fatalf("libpcap's program for %q does not load: %v", expr, err)
		}
		for _, s := range samples {
			a, b := accepts(t, ourVM, s.frame), accepts(t, theirVM, s.frame)
			compared++
			if a {
				accepted++
			}
			if a != b {
				t.Errorf("%q on frame %q: we accept: %v, libpcap accepts: %v\nframe: %s\nours (%d instructions):\n%slibpcap's (%d instructions):\n%s",
					expr, s.name, a, b, hex.EncodeToString(s.frame), len(ours), listing(ours), len(theirs), listing(theirs))
				break
			}
		}
	}
	t.Logf("%d expressions × %d frames: %d comparisons, %d accepted", len(exprs), len(samples), compared, accepted)
}

// atoms are the primitives random expressions are built from; ids are
// bare operands that reuse the qualifiers before them.
var (
	atoms = []string{"ip", "ip6", "arp", "tcp", "udp", "icmp", "icmp6", "sctp", "igmp", "vlan", "vlan 42", "vlan 7",
		"mpls", "mpls 100", "host 10.0.0.1", "src host 10.0.0.2", "dst net 10.0.0.0/24", "ip6 host 2001:db8::1",
		"port 80", "tcp dst port 443", "udp src port 53", "portrange 10-100", "ether host 02:00:00:00:00:01",
		"ether broadcast", "ether multicast", "ether proto 0x88cc", "less 60", "greater 100", "len > 60",
		"ip proto 47", "proto 50", "net 2001:db8::/32", "arp host 10.0.0.2", "ip multicast", "stp"}
	ids = []string{"10.0.0.2", "192.168.1.5", "80", "53", "443", "2001:db8::2", "02:00:00:00:00:02"}
)

func randomExpr(r *rand.Rand, depth int) string {
	if depth == 0 || r.IntN(3) == 0 {
		return atoms[r.IntN(len(atoms))]
	}
	a, b := randomExpr(r, depth-1), randomExpr(r, depth-1)
	switch r.IntN(8) {
	case 0:
		return a + " and " + b
	case 1:
		return a + " or " + b
	case 2:
		return "not " + a
	case 3:
		return "(" + a + ") && (" + b + ")"
	case 4:
		return "!(" + a + ") || " + b
	case 5:
		return a + " or " + ids[r.IntN(len(ids))]
	case 6:
		return a + " and not " + ids[r.IntN(len(ids))]
	}
	return "(" + a + " or " + b + ")"
}

// TestRandomExpressionsMatchLibpcap compares random combinations of the
// primitives: where they interact (carried-over qualifiers, the offsets
// vlan and mpls move, jumps threaded across primitives) and where both
// compilers must refuse the same expressions.
func TestRandomExpressionsMatchLibpcap(t *testing.T) {
	tcpdump := findTcpdump(t)
	pcap := emptyPcap(t)
	samples := corpus()
	// PCAPFILTER_SEED picks other expressions, to look for more differences.
	seed, _ := strconv.ParseUint(os.Getenv("PCAPFILTER_SEED"), 10, 64)
	r := rand.New(rand.NewPCG(1+seed, 2))
	n, refused := 1000, 0
	if testing.Short() {
		n = 50
	}
	for range n {
		expr := randomExpr(r, 4)
		ours, ourErr := Compile(expr)
		theirs, theirErr := libpcapProgram(tcpdump, pcap, expr)
		switch {
		case theirErr != nil && strings.Contains(theirErr.Error(), "expression rejects all packets"):
			if ourErr != nil && strings.Contains(ourErr.Error(), "matches no frame") {
				refused++
				continue
			}
			theirs = []bpf.Instruction{bpf.RetConstant{Val: 0}}
		case theirErr != nil && ourErr != nil:
			refused++
			continue
		case theirErr != nil:
			t.Errorf("%q: we compile it, libpcap refuses it: %v", expr, theirErr)
			continue
		case ourErr != nil:
			t.Errorf("%q: libpcap compiles it, we refuse it: %v", expr, ourErr)
			continue
		}
		if ourErr != nil {
			t.Errorf("%q: libpcap finds it rejects all packets, we refuse it: %v", expr, ourErr)
			continue
		}
		ourVM, err := bpf.NewVM(ours)
		if err != nil {
			t.Fatalf("Compile(%q): the program does not load: %v\n%s", expr, err, listing(ours))
		}
		theirVM, err := bpf.NewVM(theirs)
		if err != nil {
			t.Fatalf("libpcap's program for %q does not load: %v", expr, err)
		}
		for _, s := range samples {
			if a, b := accepts(t, ourVM, s.frame), accepts(t, theirVM, s.frame); a != b {
				t.Errorf("%q on frame %q: we accept: %v, libpcap accepts: %v\nframe: %s\nours (%d instructions):\n%slibpcap's (%d instructions):\n%s",
					expr, s.name, a, b, hex.EncodeToString(s.frame), len(ours), listing(ours), len(theirs), listing(theirs))
				break
			}
		}
	}
	t.Logf("%d random expressions × %d frames (%d refused by both)", n, len(samples), refused)
}
