package forwarder

// MalformedReasons names the ways a frame can be malformed, in the bit order
// of enum malformed in bpf/port.c; the Go parser uses the same bits, so both
// engines count the same reasons under the same names. A frame may have more
// than one (a 30-byte IPv4 frame is a runt and truncated).
var MalformedReasons = []string{
	"runt",               // shorter than 60 bytes (Ethernet minimum without FCS)
	"truncated_vlan",     // a VLAN tag announced but cut off
	"too_many_vlans",     // more than two stacked VLAN tags
	"truncated_ipv4",     // IPv4 header (or its options) cut off
	"bad_ipv4_version",   // EtherType IPv4, version field not 4
	"bad_ipv4_ihl",       // header length below 5 words
	"bad_ipv4_length",    // total length shorter than the header or past the frame
	"truncated_ipv6",     // IPv6 header cut off
	"bad_ipv6_version",   // EtherType IPv6, version field not 6
	"bad_ipv6_length",    // payload length past the frame
	"truncated_ipv6_ext", // an IPv6 extension header cut off
	"truncated_tcp",      // TCP header cut off
	"bad_tcp_offset",     // TCP data offset below 5 words
	"truncated_udp",      // UDP header cut off
	"truncated_icmp",     // ICMP header cut off
}

// Malformation bits, as in bpf/port.c.
const (
	MalRunt = 1 << iota
	MalTruncatedVLAN
	MalTooManyVLANs
	MalTruncatedIPv4
	MalBadIPv4Version
	MalBadIPv4IHL
	MalBadIPv4Length
	MalTruncatedIPv6
	MalBadIPv6Version
	MalBadIPv6Length
	MalTruncatedIPv6Ext
	MalTruncatedTCP
	MalBadTCPOffset
	MalTruncatedUDP
	MalTruncatedICMP
)

// DropReasons names why the datapath did not hand a frame on. The first
// ones are counted in BPF (enum drop in bpf/port.c), the afxdp ones in Go,
// the kernel ones come from the interface statistics.
var DropReasons = []string{
	"no_peer",   // the egress slot was empty: redirect refused
	"no_socket", // afxdp: no socket bound to the receive queue
	// The kernel refused a redirect after the program returned
	// (tracepoint xdp:xdp_redirect_err), by errno:
	"redirect_too_big",   // EMSGSIZE: longer than the peer's MTU allows
	"redirect_no_xmit",   // EOPNOTSUPP: the peer's driver has no XDP transmit
	"redirect_peer_down", // ENETDOWN, ENXIO: the peer is down or gone
	"redirect_failed",    // any other errno
	"tx_ring_full",       // afxdp: the peer's transmit ring or frame pool was full
	"send_error",         // afxdp: sendto failed (the library would have panicked)
	"kernel_rx",          // the driver dropped on receive (rx_dropped)
	"kernel_tx",          // the driver dropped on transmit (tx_dropped): a veth's full ring among them
	// egress_lost are frames handed to a port that did not leave it and
	// that no driver counted: passed by the peer minus transmitted minus
	// the driver's own transmit drops, from counter deltas (a driver that
	// takes fewer frames than it was given and does not say so, as igb
	// and ixgbe do with a full ring).
	"egress_lost",
	"xsk_rx", // afxdp: the kernel dropped a frame meant for the socket (receive ring full, no free frame)
}

const (
	dropNoPeer = iota
	dropNoSocket
	dropRedirectTooBig
	dropRedirectNoXmit
	dropRedirectPeerDown
	dropRedirectFailed
	dropTxRingFull
	dropSendError
	dropKernelRx
	dropKernelTx
	dropEgressLost
	dropXSKRx
	numDrops
)

// bpfDrops is how many drop reasons the BPF programs count.
const bpfDrops = 6

// reasonMap turns counters indexed like names into a map without zeros, so
// that /status stays short and readable.
func reasonMap(names []string, counts []uint64) map[string]uint64 {
	m := map[string]uint64{}
	for i, n := range counts {
		if n != 0 && i < len(names) {
			m[names[i]] = n
		}
	}
	return m
}

// numMalformed is MAL_MAX in bpf/port.c.
const numMalformed = 15
