package bootpart

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// EntryFiles are the boot partition's files that name the disk (its
// root=PARTUUID= arguments): an installer that gives a copy a disk
// signature of its own rewrites them. cmdline.txt is gokrazy's, which
// its init reads at boot; the loaders boot from their slot entries.
var EntryFiles = []string{"cmdline.txt", "syslinux.cfg", "loader/entries/" + SlotA.Entry(), "loader/entries/" + SlotB.Entry()}

// Box is a box's own boot partition, which the running system mounts
// only for the moment of a read or a change. The box writes it itself,
// never from a network stream: the inactive slot's kernel, and the
// default slot in place, so a power cut at any point leaves the running
// slot's kernel and entries as they were.
type Box struct {
	// Dev is the boot partition, mounted at Mnt for a read or a change;
	// "" when Mnt is the partition's root already (mounted elsewhere, or
	// a copy of its files).
	Dev string
	Mnt string
	// Vars is the mounted efivarfs when the box booted by UEFI, "" when
	// by legacy BIOS.
	Vars string
	// Cmdline is the running kernel's command line, whose root names
	// the running slot.
	Cmdline string

	mu sync.Mutex // one mount at a time

	// hashes are the files' SHA-256 as last read, until the box writes
	// one: the box alone writes its boot partition while it runs.
	cacheMu sync.Mutex
	hashes  map[string]string
}

// OpenBox finds the boot partition of the box whose root is root ("/"),
// to be mounted at mnt; it mounts efivarfs when the box booted by UEFI.
func OpenBox(root, mnt string) (*Box, error) {
	dev, err := device(root)
	if err != nil {
		return nil, err
	}
	cmdline, err := os.ReadFile(filepath.Join(root, "proc/cmdline"))
	if err != nil {
		return nil, err
	}
	b := &Box{Dev: dev, Mnt: mnt, Cmdline: string(cmdline)}
	if _, err := os.Stat(filepath.Join(root, "sys/firmware/efi")); err == nil {
		vars := filepath.Join(root, efiVars)
		if err := mountEFIVars(vars); err != nil {
			return nil, err
		}
		b.Vars = vars
	}
	return b, nil
}

// efivarfsMagic is efivarfs' file system type (linux/magic.h).
const efivarfsMagic = 0xde5e81e4

func mountEFIVars(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err == nil && uint32(st.Type) == efivarfsMagic {
		return nil
	}
	if err := unix.Mount("efivarfs", dir, "efivarfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting efivarfs at %s: %w", dir, err)
	}
	return nil
}

// with mounts the partition read-only, runs f on its root, and unmounts
// it. The box never mounts it for writing: it writes through the device
// (overwrite).
func (b *Box) with(f func(dir string) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Dev == "" {
		return f(b.Mnt)
	}
	if err := os.MkdirAll(b.Mnt, 0o700); err != nil {
		return err
	}
	defer os.Remove(b.Mnt)
	if err := unix.Mount(b.Dev, b.Mnt, "vfat", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting the boot partition %s read-only: %w", b.Dev, err)
	}
	err := f(b.Mnt)
	if uerr := unix.Unmount(b.Mnt, 0); uerr != nil {
		err = errors.Join(err, fmt.Errorf("unmounting the boot partition: %w", uerr))
	}
	return err
}

// Hashes returns the SHA-256 of every file on the partition (HashTree).
func (b *Box) Hashes() (map[string]string, error) {
	b.cacheMu.Lock()
	defer b.cacheMu.Unlock()
	if b.hashes == nil {
		var out map[string]string
		if err := b.with(func(dir string) (err error) {
			out, err = HashTree(dir)
			return err
		}); err != nil {
			return nil, err
		}
		b.hashes = out
	}
	return maps.Clone(b.hashes), nil
}

// forget drops the hashes read, before a write.
func (b *Box) forget() {
	b.cacheMu.Lock()
	b.hashes = nil
	b.cacheMu.Unlock()
}

// State is which slot the loaders boot.
type State struct {
	Firmware string `json:"firmware"` // "uefi" or "bios": how the box booted
	// Running is the slot the box runs (its kernel command line's root).
	Running Slot `json:"running"`
	// Default is the slot the loader of this firmware boots; Syslinux and
	// Loader are what each loader's file names (the same, but for a change
	// cut short between the two).
	Default  Slot `json:"default"`
	Syslinux Slot `json:"syslinux"`
	Loader   Slot `json:"loader"`
	// Once is the slot set to boot once, next, "" when none is.
	Once Slot `json:"once,omitempty"`
}

// TestBoot says whether the box runs a slot it does not boot by default:
// a test boot, not yet made permanent.
func (s *State) TestBoot() bool { return s.Running != s.Default }

var rootArg = regexp.MustCompile(`root=PARTUUID=([0-9a-f]{8})-0([23])\b`)

// Root finds the disk signature and the root partition the loader
// started, from the kernel command line.
func Root(cmdline string) (sig uint32, part int, err error) {
	m := rootArg.FindStringSubmatch(cmdline)
	if m == nil {
		return 0, 0, fmt.Errorf("kernel command line %q names no root=PARTUUID=<sig>-02/03", cmdline)
	}
	s, _ := strconv.ParseUint(m[1], 16, 32)
	part, _ = strconv.Atoi(m[2])
	return uint32(s), part, nil
}

// runningSlot is the slot whose root the kernel command line names.
func runningSlot(cmdline string) (Slot, error) {
	_, part, err := Root(cmdline)
	if err != nil {
		return "", err
	}
	return SlotOf(part)
}

// Read reads the state.
func (b *Box) Read() (*State, error) {
	running, err := runningSlot(b.Cmdline)
	if err != nil {
		return nil, err
	}
	s := &State{Firmware: "bios", Running: running}
	err = b.with(func(dir string) error {
		if s.Syslinux, err = readDefault(dir, SyslinuxDefaultFile, "DEFAULT ", ""); err != nil {
			return err
		}
		if s.Loader, err = readDefault(dir, LoaderConfFile, "default ", ".conf"); err != nil {
			return err
		}
		if b.Vars != "" {
			return nil
		}
		adv, _, err := readADV(dir)
		if err != nil {
			return err
		}
		if once := adv.BootOnce(); once != "" {
			s.Once, err = parseSlot(once)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	s.Default = s.Syslinux
	if b.Vars != "" {
		s.Firmware, s.Default = "uefi", s.Loader
		entry, err := oneShot(b.Vars)
		if err != nil {
			return nil, err
		}
		if entry != "" {
			if s.Once, err = defaultIn([]byte(entry), "", ".conf"); err != nil {
				return nil, fmt.Errorf("LoaderEntryOneShot %q: %w", entry, err)
			}
		}
	}
	return s, nil
}

func readDefault(dir, name, prefix, suffix string) (Slot, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return "", fmt.Errorf("boot partition: %w", err)
	}
	s, err := defaultIn(b, prefix, suffix)
	if err != nil {
		return "", fmt.Errorf("boot partition %s: %w", name, err)
	}
	return s, nil
}

// readADV reads syslinux's ADV from ldlinux.sys.
func readADV(dir string) (*ADV, int64, error) {
	f, err := os.Open(filepath.Join(dir, syslinuxFile))
	if err != nil {
		return nil, 0, fmt.Errorf("syslinux: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	off := fi.Size() - int64(len(ADV{}))
	if off <= 0 {
		return nil, 0, fmt.Errorf("syslinux: %s of %d bytes holds no ADV", syslinuxFile, fi.Size())
	}
	raw := make([]byte, len(ADV{}))
	if _, err := f.ReadAt(raw, off); err != nil {
		return nil, 0, fmt.Errorf("syslinux ADV: %w", err)
	}
	adv, _, err := ParseADV(raw)
	return &adv, off, err
}

// setADV sets syslinux's boot-once command to once ("" clears it),
// writing both copies of the ADV in place at the end of ldlinux.sys.
func (b *Box) setADV(once string) error {
	var (
		adv *ADV
		off int64
	)
	if err := b.with(func(dir string) (err error) {
		adv, off, err = readADV(dir)
		return err
	}); err != nil {
		return err
	}
	if adv.BootOnce() == once {
		return nil
	}
	if err := adv.SetBootOnce(once); err != nil {
		return err
	}
	return b.overwrite(syslinuxFile, off, adv[:])
}

// rewrite replaces a file's content by one of the same length, in place.
func (b *Box) rewrite(name string, content []byte) error {
	var old []byte
	if err := b.with(func(dir string) (err error) {
		old, err = os.ReadFile(filepath.Join(dir, name))
		return err
	}); err != nil {
		return fmt.Errorf("boot partition: %w", err)
	}
	if bytes.Equal(old, content) {
		return nil
	}
	if len(old) != len(content) {
		return fmt.Errorf("boot partition: %s holds %d bytes, the new content %d: not a file this build wrote", name, len(old), len(content))
	}
	return b.overwrite(name, 0, content)
}

// size is the length of a file on the partition.
func (b *Box) size(name string) (int64, error) {
	var n int64
	err := b.with(func(dir string) error {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("boot partition: %w", err)
		}
		n = fi.Size()
		return nil
	})
	return n, err
}

// WriteKernel makes k the kernel of slot s, which must not be the running
// slot, written over the slot's kernel file in place: kernel files are
// padded to one size (KernelFileSize), so no cluster is allocated or
// freed. The slot boots only once a test boot has checked its kernel
// against the signed manifest, so a write cut short leaves a slot that is
// never booted.
func (b *Box) WriteKernel(s Slot, k []byte) error {
	running, err := runningSlot(b.Cmdline)
	if err != nil {
		return err
	}
	if s == running {
		return fmt.Errorf("slot %s runs: its kernel is not to be replaced while it does", s)
	}
	n, err := b.size(s.Kernel())
	if err != nil {
		return err
	}
	if n != int64(len(k)) {
		return fmt.Errorf("a kernel file of %d bytes, slot %s's is %d: the box writes only kernel files of its own size (install a build with other ones)", len(k), s, n)
	}
	return b.overwrite(s.Kernel(), 0, k)
}

// KernelHash is the SHA-256 of slot s's kernel on the partition.
func (b *Box) KernelHash(s Slot) (string, error) {
	var sum string
	err := b.with(func(dir string) (err error) {
		if sum, err = hashFile(filepath.Join(dir, s.Kernel())); err != nil {
			return fmt.Errorf("boot partition: %w", err)
		}
		return nil
	})
	return sum, err
}

// BootOnce has the loader of the box's firmware boot slot s once, at the
// next boot, and the default slot after it.
func (b *Box) BootOnce(s Slot) error {
	if b.Vars != "" {
		return setOneShot(b.Vars, s.Entry())
	}
	return b.setADV(string(s))
}

// SetDefault has both loaders boot slot s from now on, and clears any
// boot-once left.
func (b *Box) SetDefault(s Slot) error {
	err := b.rewrite(SyslinuxDefaultFile, SyslinuxDefault(s))
	if err == nil {
		err = b.rewrite(LoaderConfFile, LoaderConf(s))
	}
	if err == nil {
		err = b.setADV("")
	}
	if err == nil && b.Vars != "" {
		err = setOneShot(b.Vars, "")
	}
	return err
}
