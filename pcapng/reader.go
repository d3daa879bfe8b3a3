package pcapng

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"
	"math/bits"
	"time"
)

// maxBlock bounds the blocks the Reader accepts, far above any the
// Writer writes, so that a corrupt length cannot make it hold gigabytes.
const maxBlock = 16 << 20

// Block is one of *InterfaceBlock, *PacketBlock and *StatsBlock.
type Block interface{ block() }

// InterfaceBlock is an Interface Description Block.
type InterfaceBlock struct {
	ID uint32 // its place among the section's interfaces, from 0
	Interface
	LinkType uint16
	TSResol  uint8 // if_tsresol as written; 6 (microseconds) if absent
	TSOffset int64 // if_tsoffset: seconds added to every timestamp
}

// PacketBlock is an Enhanced Packet Block. Its OrigLen is as written.
type PacketBlock struct{ Packet }

// StatsBlock is an Interface Statistics Block.
type StatsBlock struct{ Stats }

func (*InterfaceBlock) block() {}
func (*PacketBlock) block()    {}
func (*StatsBlock) block()     {}

// Reader reads a pcapng stream.
type Reader struct {
	r       io.Reader
	bo      binary.ByteOrder // the section's; nil before the first
	off     int64            // of the next block in the stream
	section SectionOptions
	ifaces  []*InterfaceBlock
	err     error // once a block is bad, the stream cannot be followed
}

// NewReader reads the Section Header Block that starts a pcapng stream.
func NewReader(r io.Reader) (*Reader, error) {
	rd := &Reader{r: r}
	if _, err := rd.next(); err != nil { // not a section header: an error
		if err == io.EOF {
			err = errors.New("pcapng: empty stream")
		}
		return nil, err
	}
	return rd, nil
}

// Section is what the latest Section Header Block said.
func (r *Reader) Section() SectionOptions { return r.section }

// Next returns the next block of a known type, skipping others, or
// io.EOF at the end of the stream. A further Section Header Block starts
// over: its interfaces are numbered from 0 again.
func (r *Reader) Next() (Block, error) {
	for r.err == nil {
		var b Block
		if b, r.err = r.next(); b != nil {
			return b, nil
		}
	}
	return nil, r.err
}

// minBody is the fixed part of each block's body, before its options.
var minBody = map[uint32]int{typeSHB: 12, typeIDB: 8, typeEPB: 20, typeISB: 12}

// next reads one block and returns it if Next returns its type.
func (r *Reader) next() (b Block, err error) {
	off := r.off
	typ, body, err := r.read()
	if err == nil && len(body) < minBody[typ] {
		err = fmt.Errorf("%d bytes of body, want at least %d", len(body), minBody[typ])
	} else if err == nil {
		switch typ {
		case typeSHB:
			err = r.parseSection(body)
		case typeIDB:
			b, err = r.parseInterface(body)
		case typeEPB:
			b, err = r.parsePacket(body)
		case typeISB:
			b, err = r.parseStats(body)
		}
	}
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("pcapng: %s at offset %d: %w", blockName(typ), off, err)
	}
	return b, err
}

// read reads a whole block and returns its body. A section header's
// byte-order magic decides how its length reads, so it is read here and
// is not part of body.
func (r *Reader) read() (typ uint32, body []byte, err error) {
	hdr := make([]byte, 8, 12)
	if n, err := io.ReadFull(r.r, hdr); err != nil {
		if err == io.EOF {
			return 0, nil, err
		}
		return 0, nil, fmt.Errorf("truncated: %d of its 8 header bytes", n)
	}
	if typ = le.Uint32(hdr); typ == typeSHB { // the same in either byte order
		hdr = hdr[:12]
		if _, err := io.ReadFull(r.r, hdr[8:]); err != nil {
			return typ, nil, errors.New("truncated before its byte-order magic")
		}
		switch magic := le.Uint32(hdr[8:]); magic {
		case byteOrderMagic:
			r.bo = binary.LittleEndian
		case bits.ReverseBytes32(byteOrderMagic):
			r.bo = binary.BigEndian
		default:
			return typ, nil, fmt.Errorf("byte-order magic % x is neither 1a2b3c4d nor 4d3c2b1a", hdr[8:])
		}
	} else if r.bo == nil {
		return typ, nil, fmt.Errorf("not a pcapng stream, which starts with a section header block (type %#x)", typeSHB)
	} else {
		typ = r.bo.Uint32(hdr)
	}
	n := r.bo.Uint32(hdr[4:])
	if n%4 != 0 || n < uint32(len(hdr))+4 || n > maxBlock {
		return typ, nil, fmt.Errorf("block length %d is not a multiple of 4 between %d and %d", n, len(hdr)+4, maxBlock)
	}
	// Read what is there rather than allocate what the length claims.
	rest, err := io.ReadAll(io.LimitReader(r.r, int64(n)-int64(len(hdr))))
	if err != nil {
		return typ, nil, err
	}
	if len(rest) < int(n)-len(hdr) {
		return typ, nil, fmt.Errorf("truncated: %d of its %d bytes", len(hdr)+len(rest), n)
	}
	if trailer := r.bo.Uint32(rest[len(rest)-4:]); trailer != n {
		return typ, nil, fmt.Errorf("block length %d at its end differs from %d at its start", trailer, n)
	}
	r.off += int64(n)
	return typ, rest[:len(rest)-4], nil
}

func (r *Reader) parseSection(body []byte) error {
	if major, minor := r.bo.Uint16(body), r.bo.Uint16(body[2:]); major != 1 {
		return fmt.Errorf("version %d.%d, only 1.x is read", major, minor)
	}
	var s SectionOptions
	fields := map[uint16]*string{optComment: &s.Comment, shbHardware: &s.Hardware, shbOS: &s.OS, shbUserAppl: &s.Application}
	err := walkOptions(body[12:], r.bo, nil, func(code uint16, v []byte) error {
		if f := fields[code]; f != nil {
			*f = optString(v)
		}
		return nil
	})
	r.section, r.ifaces = s, nil
	return err
}

func (r *Reader) parseInterface(body []byte) (Block, error) {
	ib := &InterfaceBlock{ID: uint32(len(r.ifaces)), LinkType: r.bo.Uint16(body), TSResol: 6}
	ib.SnapLen = r.bo.Uint32(body[4:])
	err := walkOptions(body[8:], r.bo, idbSizes, func(code uint16, v []byte) error {
		switch code {
		case ifName:
			ib.Name = optString(v)
		case ifDescription:
			ib.Description = optString(v)
		case ifTSResol:
			ib.TSResol = v[0]
		case ifTSOffset:
			ib.TSOffset = int64(r.bo.Uint64(v))
		}
		return nil
	})
	if err == nil {
		r.ifaces = append(r.ifaces, ib)
	}
	return ib, err
}

// iface is the interface a packet or statistics block refers to, and the
// block's time.
func (r *Reader) iface(body []byte) (*InterfaceBlock, time.Time, error) {
	id := r.bo.Uint32(body)
	if int64(id) >= int64(len(r.ifaces)) {
		return nil, time.Time{}, fmt.Errorf("interface %d is not among the %d the section describes", id, len(r.ifaces))
	}
	t, err := r.ifaces[id].time(r.bo.Uint32(body[4:]), r.bo.Uint32(body[8:]))
	return r.ifaces[id], t, err
}

func (r *Reader) parsePacket(body []byte) (Block, error) {
	ib, t, err := r.iface(body)
	if err != nil {
		return nil, err
	}
	caplen := r.bo.Uint32(body[12:])
	if int64(caplen) > int64(len(body)-20) {
		return nil, fmt.Errorf("captured length %d exceeds the %d bytes left in the block", caplen, len(body)-20)
	}
	p := &PacketBlock{Packet{Interface: ib.ID, Time: t, Data: body[20 : 20+caplen], OrigLen: int(r.bo.Uint32(body[16:]))}}
	// On an error, next returns no block.
	return p, walkOptions(body[20+caplen+uint32(pad(int(caplen))):], r.bo, epbSizes, func(code uint16, v []byte) error {
		switch code {
		case optComment:
			p.Comments = append(p.Comments, optString(v))
		case epbFlags:
			p.Direction = Direction(r.bo.Uint32(v) & 3)
		case epbQueue:
			p.Queue = new(r.bo.Uint32(v))
		case epbVerdict:
			if len(v) == 0 {
				return fmt.Errorf("option %d: empty verdict", code)
			}
			vd := Verdict{Type: VerdictType(v[0]), Data: v[1:]}
			if vd.Type == VerdictTC || vd.Type == VerdictXDP {
				if len(v) != 9 {
					return fmt.Errorf("option %d: %d bytes, want 9", code, len(v))
				}
				vd.Value, vd.Data = r.bo.Uint64(v[1:]), nil
			}
			p.Verdicts = append(p.Verdicts, vd)
		}
		return nil
	})
}

func (r *Reader) parseStats(body []byte) (Block, error) {
	ib, t, err := r.iface(body)
	if err != nil {
		return nil, err
	}
	s := &StatsBlock{Stats{Interface: ib.ID, Time: t}}
	counters := map[uint16]**uint64{isbIfRecv: &s.Received, isbIfDrop: &s.Dropped, isbFilterAccept: &s.Accepted,
		isbOSDrop: &s.OSDropped, isbUsrDeliv: &s.Delivered}
	return s, walkOptions(body[12:], r.bo, isbSizes, func(code uint16, v []byte) (err error) {
		switch code {
		case optComment:
			s.Comments = append(s.Comments, optString(v))
		case isbStartTime:
			s.Start, err = ib.time(r.bo.Uint32(v), r.bo.Uint32(v[4:]))
		case isbEndTime:
			s.End, err = ib.time(r.bo.Uint32(v), r.bo.Uint32(v[4:]))
		default:
			if c := counters[code]; c != nil {
				*c = new(r.bo.Uint64(v))
			}
		}
		return err
	})
}

// time is the UTC time of a timestamp given as its upper and lower 32
// bits, in ib's units: a negative power of 10 seconds or, with the top bit
// of if_tsresol set, of 2, after if_tsoffset. It is exact to the
// nanosecond for every if_tsresol, which 64 bits are not.
func (ib *InterfaceBlock) time(hi, lo uint32) (time.Time, error) {
	u := uint64(hi)<<32 | uint64(lo)
	base := int64(10)
	if ib.TSResol&0x80 != 0 {
		base = 2
	}
	unit := new(big.Int).Exp(big.NewInt(base), big.NewInt(int64(ib.TSResol&0x7f)), nil)
	ns := new(big.Int).Mul(new(big.Int).SetUint64(u), big.NewInt(1e9))
	sec, frac := ns.Quo(ns, unit).QuoRem(ns, big.NewInt(1e9), new(big.Int))
	if sec.Add(sec, big.NewInt(ib.TSOffset)); !sec.IsInt64() {
		return time.Time{}, fmt.Errorf("timestamp %d with if_tsresol %#x and if_tsoffset %d is out of range", u, ib.TSResol, ib.TSOffset)
	}
	return time.Unix(sec.Int64(), frac.Int64()).UTC(), nil
}
