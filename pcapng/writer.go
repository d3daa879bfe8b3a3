package pcapng

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"sync"
	"time"
)

const (
	// LinkTypeEthernet is the link type of every interface the Writer
	// describes: the XDP hook sees whole Ethernet frames.
	LinkTypeEthernet = 1
	// maxPacket is the most bytes a packet may carry: Wireshark refuses
	// to read larger ones, and no frame the box forwards comes near it.
	maxPacket = 262144
)

// SectionOptions describe the capture as a whole (the Section Header
// Block). Empty strings are left out.
type SectionOptions struct {
	Hardware    string // shb_hardware, e.g. the appliance's model
	OS          string // shb_os, e.g. "ncpos 2026.05"
	Application string // shb_userappl
	Comment     string // opt_comment
}

// Interface describes a port packets are captured on.
type Interface struct {
	Name        string // if_name, as the operator knows the port: "LAN1"
	Description string // if_description
	SnapLen     uint32 // the most bytes kept of each packet; 0: all of it
}

// Direction is whether a packet came in on or went out of its interface
// (epb_flags bits 0-1).
type Direction uint8

const (
	DirectionUnknown Direction = 0
	Inbound          Direction = 1
	Outbound         Direction = 2
)

// VerdictType says who decided a packet's fate (epb_verdict's first
// byte).
type VerdictType uint8

const (
	VerdictHardware VerdictType = 0 // a NIC's decision, in bytes of its own
	VerdictTC       VerdictType = 1 // a Linux eBPF TC program's TC_ACT_* value
	VerdictXDP      VerdictType = 2 // a Linux eBPF XDP program's xdp_action
)

// The xdp_action values (linux/bpf.h), for Verdict.Value.
const (
	XDPAborted  = 0
	XDPDrop     = 1
	XDPPass     = 2
	XDPTX       = 3
	XDPRedirect = 4
)

// Verdict is what was done with a packet (epb_verdict).
type Verdict struct {
	Type  VerdictType
	Value uint64 // for VerdictTC and VerdictXDP
	Data  []byte // for every other type: the verdict's bytes as they are
}

// Packet is one captured frame (an Enhanced Packet Block).
type Packet struct {
	Interface uint32    // the ID AddInterface returned
	Time      time.Time // when it was captured, to the nanosecond
	Data      []byte    // the captured bytes, from the Ethernet header on
	// OrigLen is the frame's length on the wire; 0 when the Writer is to
	// take len(Data), as for a frame not cut short.
	OrigLen   int
	Direction Direction
	Verdicts  []Verdict // one option each: XDP's, TC's, a NIC's
	Queue     *uint32   // epb_queue: the receive queue, when known
	Comments  []string  // opt_comment, one option each
}

// Stats are an interface's counters (an Interface Statistics Block).
// Counters left nil and zero start and end times are not written.
type Stats struct {
	Interface  uint32
	Time       time.Time // when the counters were read
	Start, End time.Time // when capturing began and ended
	Received   *uint64   // isb_ifrecv: packets the interface received
	Dropped    *uint64   // isb_ifdrop: dropped by the interface for want of resources
	Accepted   *uint64   // isb_filteraccept: accepted by the capture filter
	OSDropped  *uint64   // isb_osdrop: dropped by the OS, e.g. a full ring
	Delivered  *uint64   // isb_usrdeliv: delivered to the capture
	Comments   []string
}

// Writer writes a pcapng stream. Its methods may be called from any
// goroutine; each writes its block with one Write call, so blocks never
// interleave. After a failed Write every method returns its error: the
// stream ends mid-block.
type Writer struct {
	mu       sync.Mutex
	w        io.Writer
	snaplens []uint32 // by interface ID
	err      error
}

// NewWriter writes the Section Header Block to w.
func NewWriter(w io.Writer, opts SectionOptions) (*Writer, error) {
	var o options
	o.strIf(optComment, "comment", opts.Comment)
	o.strIf(shbHardware, "hardware", opts.Hardware)
	o.strIf(shbOS, "OS", opts.OS)
	o.strIf(shbUserAppl, "application", opts.Application)
	if o.err != nil {
		return nil, fmt.Errorf("pcapng: section header: %w", o.err)
	}
	// Major version 1 and minor 0 as 16-bit halves, and a section length
	// of -1: a stream's is not known.
	fields := le.AppendUint64(u32s(byteOrderMagic, 1), math.MaxUint64)
	wr := &Writer{w: w}
	if err := wr.write(typeSHB, fields, o.list()); err != nil {
		return nil, err
	}
	return wr, nil
}

// AddInterface writes an Interface Description Block for an Ethernet
// port and returns the ID its packets and statistics refer to.
func (w *Writer) AddInterface(i Interface) (uint32, error) {
	var o options
	o.strIf(ifName, "interface name", i.Name)
	o.strIf(ifDescription, "interface description", i.Description)
	o.add(ifTSResol, []byte{9}) // 10^-9 s: the default, µs, would lose most of an XDP timestamp
	if o.err != nil {
		return 0, fmt.Errorf("pcapng: interface %q: %w", i.Name, o.err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// The link type and a reserved 0 as 16-bit halves.
	if err := w.write(typeIDB, u32s(LinkTypeEthernet, i.SnapLen), o.list()); err != nil {
		return 0, err
	}
	w.snaplens = append(w.snaplens, i.SnapLen)
	return uint32(len(w.snaplens) - 1), nil
}

// WritePacket writes an Enhanced Packet Block. It keeps none of p, whose
// Data may be a ring buffer's frame, reused as soon as it returns.
func (w *Writer) WritePacket(p Packet) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	body, err := w.packet(p)
	if err != nil {
		return fmt.Errorf("pcapng: packet on interface %d: %w", p.Interface, err)
	}
	return w.write(typeEPB, body...)
}

// packet checks p and returns its block's body.
func (w *Writer) packet(p Packet) ([][]byte, error) {
	if int(p.Interface) >= len(w.snaplens) {
		return nil, fmt.Errorf("no such interface (%d added)", len(w.snaplens))
	}
	if snap := w.snaplens[p.Interface]; snap != 0 && len(p.Data) > int(snap) {
		return nil, fmt.Errorf("%d captured bytes exceed the interface's snaplen of %d", len(p.Data), snap)
	}
	if len(p.Data) > maxPacket {
		return nil, fmt.Errorf("%d captured bytes exceed the limit of %d", len(p.Data), maxPacket)
	}
	orig := cmp.Or(p.OrigLen, len(p.Data))
	if orig < len(p.Data) || int64(orig) > math.MaxUint32 {
		return nil, fmt.Errorf("original length %d is not between the %d captured bytes and 2^32-1", orig, len(p.Data))
	}
	if p.Direction > Outbound {
		return nil, fmt.Errorf("direction %d is neither inbound (1) nor outbound (2)", p.Direction)
	}
	ts, err := stamp(p.Time)
	if err != nil {
		return nil, err
	}
	var o options
	for _, c := range p.Comments {
		o.str(optComment, "comment", c)
	}
	if p.Direction != DirectionUnknown {
		o.add(epbFlags, u32s(uint32(p.Direction)))
	}
	if p.Queue != nil {
		o.add(epbQueue, u32s(*p.Queue))
	}
	for _, v := range p.Verdicts {
		if v.Type == VerdictTC || v.Type == VerdictXDP { // 64 bits in the section's byte order
			o.add(epbVerdict, le.AppendUint64([]byte{byte(v.Type)}, v.Value))
		} else {
			o.add(epbVerdict, append([]byte{byte(v.Type)}, v.Data...))
		}
	}
	lens := u32s(uint32(len(p.Data)), uint32(orig))
	return [][]byte{u32s(p.Interface), ts, lens, p.Data, make([]byte, pad(len(p.Data))), o.list()}, o.err
}

// WriteStats writes an Interface Statistics Block.
func (w *Writer) WriteStats(s Stats) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	body, err := w.stats(s)
	if err != nil {
		return fmt.Errorf("pcapng: statistics of interface %d: %w", s.Interface, err)
	}
	return w.write(typeISB, body...)
}

// stats checks s and returns its block's body.
func (w *Writer) stats(s Stats) ([][]byte, error) {
	if int(s.Interface) >= len(w.snaplens) {
		return nil, fmt.Errorf("no such interface (%d added)", len(w.snaplens))
	}
	var o options
	for _, c := range s.Comments {
		o.str(optComment, "comment", c)
	}
	// Indexed by option code, in the order the draft lists them.
	for code, t := range [...]time.Time{isbStartTime: s.Start, isbEndTime: s.End} {
		if !t.IsZero() {
			ts, err := stamp(t)
			if err != nil {
				return nil, err
			}
			o.add(uint16(code), ts)
		}
	}
	for code, c := range [...]*uint64{isbIfRecv: s.Received, isbIfDrop: s.Dropped, isbFilterAccept: s.Accepted, isbOSDrop: s.OSDropped, isbUsrDeliv: s.Delivered} {
		if c != nil {
			o.add(uint16(code), le.AppendUint64(nil, *c))
		}
	}
	ts, err := stamp(s.Time)
	if err != nil {
		return nil, err
	}
	return [][]byte{u32s(s.Interface), ts, o.list()}, o.err
}

// stamp is t in nanoseconds since 1970, as if_tsresol 9 has it, in two
// 32-bit halves, the upper first.
func stamp(t time.Time) ([]byte, error) {
	if t.Before(time.Unix(0, 0)) || t.After(time.Unix(0, math.MaxInt64)) {
		return nil, fmt.Errorf("time %v is not between 1970 and 2262", t)
	}
	ns := uint64(t.UnixNano())
	return u32s(uint32(ns>>32), uint32(ns)), nil
}

// u32s are 32-bit little-endian fields.
func u32s(vs ...uint32) []byte {
	b := make([]byte, 0, 4*len(vs))
	for _, v := range vs {
		b = le.AppendUint32(b, v)
	}
	return b
}

// write writes one block of type typ whose body is parts, each already
// padded to 32 bits, with one Write call.
func (w *Writer) write(typ uint32, parts ...[]byte) error {
	if w.err != nil {
		return w.err
	}
	n := 12
	for _, p := range parts {
		n += len(p)
	}
	b := le.AppendUint32(le.AppendUint32(make([]byte, 0, n), typ), uint32(n))
	for _, p := range parts {
		b = append(b, p...)
	}
	b = le.AppendUint32(b, uint32(n)) // repeated, for reading backwards
	if _, err := w.w.Write(b); err != nil {
		w.err = fmt.Errorf("pcapng: writing %s: %w", blockName(typ), err)
	}
	return w.err
}
