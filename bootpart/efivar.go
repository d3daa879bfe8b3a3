package bootpart

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"unicode/utf16"

	"golang.org/x/sys/unix"
)

// systemd-boot reads the entry to boot once from the EFI variable
// LoaderEntryOneShot of the Boot Loader Interface's vendor GUID, a
// NUL-terminated UTF-16 entry ID, and removes the variable as it boots it
// (systemd's Boot Loader Interface, docs/BOOT_LOADER_INTERFACE.md).
// Through efivarfs a variable is a file: four bytes of attributes, then
// the value.
const (
	loaderGUID    = "4a67b082-0a4c-41cf-b6c7-440b29bb8c4f"
	oneShotVar    = "LoaderEntryOneShot-" + loaderGUID
	efiAttributes = 0x7  // non-volatile, boot service and runtime access
	fsImmutable   = 0x10 // FS_IMMUTABLE_FL, linux/fs.h
	// efiVars is where efivarfs is mounted.
	efiVars = "sys/firmware/efi/efivars"
)

// efiString is a NUL-terminated UTF-16LE string.
func efiString(s string) []byte {
	u := append(utf16.Encode([]rune(s)), 0)
	b := make([]byte, 2*len(u))
	for i, c := range u {
		binary.LittleEndian.PutUint16(b[2*i:], c)
	}
	return b
}

// parseEFIString reads a NUL-terminated UTF-16LE string.
func parseEFIString(b []byte) string {
	var u []uint16
	for i := 0; i+1 < len(b); i += 2 {
		c := binary.LittleEndian.Uint16(b[i:])
		if c == 0 {
			break
		}
		u = append(u, c)
	}
	return string(utf16.Decode(u))
}

// mutable clears efivarfs' immutable flag on an existing variable, which
// it sets on every variable so that nothing removes one by mistake.
func mutable(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		return fmt.Errorf("flags of %s: %w", path, err)
	}
	if flags&fsImmutable == 0 {
		return nil
	}
	if err := unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags&^fsImmutable)); err != nil {
		return fmt.Errorf("clearing the immutable flag of %s: %w", path, err)
	}
	return nil
}

// setOneShot sets (entry != "") or removes systemd-boot's one-shot entry
// in the efivarfs mounted at vars.
func setOneShot(vars, entry string) error {
	p := filepath.Join(vars, oneShotVar)
	if err := mutable(p); err != nil {
		return err
	}
	if entry == "" {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing LoaderEntryOneShot: %w", err)
		}
		return nil
	}
	b := binary.LittleEndian.AppendUint32(nil, efiAttributes)
	b = append(b, efiString(entry)...)
	// efivarfs sets a variable, whole, in one write (and takes no
	// truncation).
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("LoaderEntryOneShot: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("writing LoaderEntryOneShot: %w", err)
	}
	return f.Close()
}

// oneShot reads systemd-boot's one-shot entry, "" when none is set.
func oneShot(vars string) (string, error) {
	b, err := os.ReadFile(filepath.Join(vars, oneShotVar))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("LoaderEntryOneShot: %w", err)
	}
	if len(b) < 4 {
		return "", fmt.Errorf("LoaderEntryOneShot of %d bytes", len(b))
	}
	return parseEFIString(b[4:]), nil
}
