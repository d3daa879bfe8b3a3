package bypass

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Emulated devices: each models the hardware at the level the backend
// talks to it (I/O port accesses, SMBus transactions, files, ioctls) and
// logs every access, so that tests can check the exact writes for every
// state.

// w83627 is a Winbond W83627-class Super I/O seen through /dev/port: it
// ignores the data port until the entry key (0x87 twice) has been written
// to the index port, selects logical devices through register 0x07, and
// locks again on 0xAA. Its watchdog (LDN 8, CRF6, counting seconds) drops
// the bypass GPIOs (GP24 and GP25, both pairs) when it reaches zero, as
// Lanner's MB-7565 wires it.
type w83627 struct {
	indexPort, dataPort int64
	unlocked            bool
	keys                int
	idx                 byte
	ldn                 byte
	global              [0x30]byte
	regs                map[byte]*[256]byte
	log                 []string
	violations          []string
}

func newW83627() *w83627 {
	return &w83627{indexPort: 0x2e, dataPort: 0x2f, regs: map[byte]*[256]byte{}}
}

func (w *w83627) reg(ldn, r byte) *byte {
	if r < 0x30 {
		return &w.global[r]
	}
	if w.regs[ldn] == nil {
		w.regs[ldn] = &[256]byte{}
	}
	return &w.regs[ldn][r]
}

func (w *w83627) WriteAt(p []byte, off int64) (int, error) {
	v := p[0]
	w.log = append(w.log, fmt.Sprintf("out %#x %#02x", off, v))
	switch off {
	case w.indexPort:
		switch {
		case !w.unlocked && v == 0x87:
			w.keys++
			w.unlocked = w.keys == 2
		case !w.unlocked:
			w.keys = 0
		case v == 0xaa:
			w.unlocked, w.keys = false, 0
		default:
			w.idx = v
		}
	case w.dataPort:
		switch {
		case !w.unlocked:
			w.violations = append(w.violations, fmt.Sprintf("data write %#02x while locked", v))
		case w.idx == 0x07:
			w.ldn = v
		default:
			*w.reg(w.ldn, w.idx) = v
		}
	default:
		w.violations = append(w.violations, fmt.Sprintf("write to port %#x", off))
	}
	return 1, nil
}

func (w *w83627) ReadAt(p []byte, off int64) (int, error) {
	var v byte = 0xff
	switch {
	case off == w.dataPort && w.unlocked && w.idx == 0x07:
		v = w.ldn
	case off == w.dataPort && w.unlocked:
		v = *w.reg(w.ldn, w.idx)
	default:
		w.violations = append(w.violations, fmt.Sprintf("read of port %#x (unlocked %v)", off, w.unlocked))
	}
	p[0] = v
	w.log = append(w.log, fmt.Sprintf("in %#x = %#02x", off, v))
	return 1, nil
}

// tick lets n seconds pass on the watchdog.
func (w *w83627) tick(n int) {
	c := w.reg(8, 0xf6)
	for ; n > 0 && *c > 0; n-- {
		*c--
		if *c == 0 && *w.reg(9, 0xf1)&1 == 0 { // GP30 low: timeout means bypass
			*w.reg(8, 0xf1) &^= 0x30
		}
	}
}

func (w *w83627) take() []string {
	l := w.log
	w.log = nil
	return l
}

// portSpace is plain I/O ports with a log.
type portSpace struct {
	ports map[int64]byte
	log   []string
}

func (s *portSpace) WriteAt(p []byte, off int64) (int, error) {
	s.ports[off] = p[0]
	s.log = append(s.log, fmt.Sprintf("out %#x %#02x", off, p[0]))
	return 1, nil
}

func (s *portSpace) ReadAt(p []byte, off int64) (int, error) {
	p[0] = s.ports[off]
	s.log = append(s.log, fmt.Sprintf("in %#x = %#02x", off, p[0]))
	return 1, nil
}

func (s *portSpace) take() []string {
	l := s.log
	s.log = nil
	return l
}

// gen3 is an SMBus bypass controller with a register layout made up for
// the generic smbus backend's test (Lanner's real Gen 3 modules have
// their own backend, lanner, and emulator, lannerMCU):
// 0x10 bit0 run-time bypass, bit1 disconnect; 0x11 bit0 power-up
// ("Just-On") bypass; 0x12 bit0 system-off bypass; 0x13 watchdog count in
// seconds; 0x14 bit0 watchdog enable, bit1 latched "expired".
type gen3 struct {
	regs   [256]byte
	log    []string
	closed bool
}

func (g *gen3) ReadByteData(cmd byte) (byte, error) {
	g.log = append(g.log, fmt.Sprintf("r %#02x = %#02x", cmd, g.regs[cmd]))
	return g.regs[cmd], nil
}

func (g *gen3) WriteByteData(cmd, v byte) error {
	g.log = append(g.log, fmt.Sprintf("w %#02x %#02x", cmd, v))
	g.regs[cmd] = v
	return nil
}

func (g *gen3) Close() error { g.closed = true; return nil }

func (g *gen3) tick(n int) {
	for ; n > 0 && g.regs[0x14]&1 != 0 && g.regs[0x13] > 0; n-- {
		g.regs[0x13]--
		if g.regs[0x13] == 0 {
			g.regs[0x10] |= 0x01
			g.regs[0x14] |= 0x02
		}
	}
}

func (g *gen3) take() []string {
	l := g.log
	g.log = nil
	return l
}

func wantLog(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: accesses\n  %s\nwant\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// fileTree is a vendor driver's directory in a temporary folder, with a
// log of the writes the backend makes.
type fileTree struct {
	dir string
}

func newFileTree(t *testing.T, files map[string]string) *fileTree {
	dir := t.TempDir()
	for name, v := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &fileTree{dir: dir}
}

func (f *fileTree) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
