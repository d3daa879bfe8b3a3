// Package pcapfilter compiles capture filters, written the way tcpdump
// takes them, to classic BPF for Ethernet (DLT_EN10MB) frames. The box
// captures at the XDP hook, where libpcap cannot run, so the operator's
// filter is compiled here and the program handed on to be translated to
// eBPF.
//
// The syntax and the meaning of each primitive are pcap-filter(7)'s, and
// a program accepts exactly the frames that the program libpcap builds
// for the same expression accepts, on a capture file of link type
// Ethernet: VLAN tags are in the frame, as at the XDP hook, not in the
// ancillary data of a Linux socket. That includes libpcap's quirks:
//
//   - not binds tightest; and and or bind equally and group from the left,
//     so "a or b and c" is "(a or b) and c".
//   - A bare address, number or name after and, or, not or "(" reuses the
//     qualifiers of the primitive before it: "host 10.0.0.1 or 10.0.0.2",
//     "tcp port 80 or 443". After a parenthesised expression it reuses
//     those from before the parenthesis.
//   - Each vlan moves everything after it in the expression (not only
//     what it is and-ed with) 4 bytes further into the frame, and matches
//     the TPIDs 0x8100, 0x88a8 and 0x9100; each mpls moves the network
//     layer 4 bytes further, and after it only IPv4 and IPv6 can be
//     matched, by the bottom-of-stack bit and the IP version.
//   - host with an IPv4 address also matches ARP and RARP (not inside
//     MPLS); ports are looked for in IPv4 packets that are not later
//     fragments, past the header length the packet gives, and right after
//     the fixed IPv6 header, with no walk over extension headers.
//   - A load past the end of the frame rejects it, whatever the rest of
//     the expression says. So a truncated frame is judged by the loads
//     libpcap's optimised program makes, and the optimiser here does what
//     libpcap's does that changes which loads are made (optimize.go).
//
// The subset is what an appliance on a link needs: and, or, not; ether
// host, src, dst, proto, broadcast and multicast; host and net (CIDR,
// mask or the short forms) for IPv4 and IPv6; port and portrange; ip,
// ip6, arp, rarp, tcp, udp, sctp, icmp, icmp6, igmp and the other
// protocol abbreviations; ip proto, ip6 proto, proto; vlan, mpls; less,
// greater, and len compared with a number; ip and ip6 multicast.
//
// Where it differs from libpcap, it does so on purpose. Names are not
// resolved (the box has no name service to trust, and a filter should
// mean the same on the box as on the operator's machine): addresses and
// ports are numbers, protocols may be named from a fixed table of
// /etc/protocols. ip broadcast, which depends on the capture interface's
// netmask, is refused, as is the rest of pcap-filter(7) (arithmetic on
// packet bytes, gateway, decnet, pppoes, geneve, protochain, ...), with a
// *SyntaxError naming it. An expression that matches no frame is refused,
// as libpcap refuses one its optimiser proves so.
package pcapfilter
