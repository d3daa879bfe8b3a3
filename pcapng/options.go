package pcapng

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Block types (draft section 10.1) and the byte-order magic that tells a
// section's byte order (section 4.1).
const (
	typeSHB        = 0x0a0d0d0a
	typeIDB        = 1
	typeISB        = 5
	typeEPB        = 6
	byteOrderMagic = 0x1a2b3c4d
)

// Option codes: the common ones (section 3.5), then each block's.
const (
	optEnd, optComment                  = 0, 1
	shbHardware, shbOS, shbUserAppl     = 2, 3, 4
	ifName, ifDescription               = 2, 3
	ifTSResol, ifTSOffset               = 9, 14
	epbFlags, epbQueue, epbVerdict      = 2, 6, 7
	isbStartTime, isbEndTime, isbIfRecv = 2, 3, 4
	isbIfDrop, isbFilterAccept          = 5, 6
	isbOSDrop, isbUsrDeliv              = 7, 8
)

// The lengths of the fixed-length options the Reader reads, by block.
var (
	idbSizes = map[uint16]int{ifTSResol: 1, ifTSOffset: 8}
	epbSizes = map[uint16]int{epbFlags: 4, epbQueue: 4}
	isbSizes = map[uint16]int{isbStartTime: 8, isbEndTime: 8, isbIfRecv: 8, isbIfDrop: 8, isbFilterAccept: 8, isbOSDrop: 8, isbUsrDeliv: 8}
)

// le is the Writer's byte order, which the Reader reads too.
var le = binary.LittleEndian

var blockNames = map[uint32]string{0: "block", typeSHB: "section header block", typeIDB: "interface description block",
	typeISB: "interface statistics block", typeEPB: "enhanced packet block"}

// blockName names a block type in errors; 0 (reserved) stands for a
// block whose type is not known yet.
func blockName(typ uint32) string {
	if n, ok := blockNames[typ]; ok {
		return n
	}
	return fmt.Sprintf("block of type %#x", typ)
}

// pad is the number of zero bytes that bring n to a multiple of 32 bits.
func pad(n int) int { return -n & 3 }

// options builds a little-endian option list. The first invalid option
// is kept in err, so that a block is checked whole before any of it is
// written.
type options struct {
	b   []byte
	err error
}

func (o *options) add(code uint16, v []byte) {
	if len(v) > math.MaxUint16 && o.err == nil {
		o.err = fmt.Errorf("option %d: %d bytes, at most %d fit", code, len(v), math.MaxUint16)
	}
	o.b = le.AppendUint16(o.b, code)
	o.b = le.AppendUint16(o.b, uint16(len(v)))
	o.b = append(o.b, v...)
	o.b = append(o.b, make([]byte, pad(len(v)))...)
}

// str adds a string, which the format requires to be UTF-8; readers end a
// string at a NUL byte, so none may slip in either.
func (o *options) str(code uint16, what, s string) {
	if (!utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0) && o.err == nil {
		o.err = fmt.Errorf("%s %q: not valid UTF-8 without NUL bytes", what, s)
	}
	o.add(code, []byte(s))
}

// strIf adds s unless it is empty.
func (o *options) strIf(code uint16, what, s string) {
	if s != "" {
		o.str(code, what, s)
	}
}

// list is the option list with opt_endofopt, or nothing if it is empty.
func (o *options) list() []byte {
	if len(o.b) == 0 {
		return nil
	}
	return append(o.b, optEnd, 0, 0, 0)
}

// walkOptions calls fn for each option in b up to opt_endofopt or the end
// of b (the end marker may be missing, section 3.5), after checking the
// length of those in sizes.
func walkOptions(b []byte, bo binary.ByteOrder, sizes map[uint16]int, fn func(code uint16, v []byte) error) error {
	for len(b) >= 4 { // blocks are padded to 32 bits: nothing else is left over
		code, n := bo.Uint16(b), int(bo.Uint16(b[2:]))
		if code == optEnd {
			return nil
		}
		b = b[4:]
		if n > len(b) {
			return fmt.Errorf("option %d: length %d exceeds the %d bytes left", code, n, len(b))
		}
		if want, ok := sizes[code]; ok && n != want {
			return fmt.Errorf("option %d: %d bytes, want %d", code, n, want)
		}
		if err := fn(code, b[:n]); err != nil {
			return err
		}
		b = b[min(n+pad(n), len(b)):]
	}
	return nil
}

// optString reads a string option, which ends at a NUL byte if it has one.
func optString(v []byte) string {
	s, _, _ := strings.Cut(string(v), "\x00")
	return s
}
