// Package pcapng writes and reads packet captures in the pcapng format
// (IETF draft-ietf-opsawg-pcapng, "PCAP Now Generic (pcapng) Capture File
// Format", formerly "PCAP Next Generation"), so that the frames the
// appliance captures at its XDP hook reach the operator's Wireshark with
// what the box knew about each one: the port it arrived on or left by,
// the direction, the XDP program's verdict and a comment saying why.
// gopacket's pcapgo writer has no way to write per-packet comments,
// flags or verdicts.
//
// A capture is streamed over HTTP while it runs, so the Writer writes
// each block with a single Write call and keeps nothing back between
// blocks: the operator sees every packet as soon as the caller flushes,
// and a capture cut short ends on a block boundary. Sections are
// little-endian, version 1.0, with an unknown section length (-1), and
// interfaces are Ethernet with nanosecond timestamps (if_tsresol 9).
//
// The Reader reads what the Writer writes and what other tools write in
// either byte order, for the tests of the appliance and of this package.
// It reads Section Header, Interface Description, Enhanced Packet and
// Interface Statistics Blocks and skips every other block type.
package pcapng
