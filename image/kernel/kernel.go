// Package kernel ships the ncpos Linux kernel: a monolithic (no modules)
// x86_64 bzImage built from Debian's linux-source-6.12 with
// x86_64_defconfig plus config.fragment, by build.sh.
//
// The bzImage, the full kernel .config it was built from (file "config")
// and the kernel release string (file "VERSION") are embedded so that the
// image builder can install the kernel without any external files.
//
// The package also contains small helpers to inspect a bzImage: the kernel
// version string from the x86 boot setup header, and the kernel
// configuration embedded by CONFIG_IKCONFIG (the equivalent of
// scripts/extract-ikconfig).
package kernel

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/zstd"
)

var (
	//go:embed bzImage
	bzImage []byte

	//go:embed config
	config []byte

	//go:embed VERSION
	version string
)

// BzImage returns a copy of the embedded kernel image (arch/x86/boot/bzImage).
// It is an EFI-stub kernel, so it can be loaded directly by systemd-boot.
func BzImage() []byte { return bytes.Clone(bzImage) }

// Config returns a copy of the full kernel .config the embedded bzImage was
// built from.
func Config() []byte { return bytes.Clone(config) }

// Release returns the kernel release string (`make kernelrelease`), e.g.
// "6.12.117-ncpos".
func Release() string { return strings.TrimSpace(version) }

var (
	ikcfgStart = []byte("IKCFG_ST")
	ikcfgEnd   = []byte("IKCFG_ED")
)

// maxDecompressed bounds how much is decompressed from any candidate
// stream (an uncompressed x86_64 kernel is a few tens of MiB).
const maxDecompressed = 512 << 20

// payloads are the compressions a bzImage's payload may have, by the
// magic its stream starts with.
var payloads = []struct {
	magic      []byte
	decompress func(b []byte, limit int64) ([]byte, error)
}{
	{[]byte{0x1f, 0x8b, 0x08}, gunzip},       // CONFIG_KERNEL_GZIP
	{[]byte{0x28, 0xb5, 0x2f, 0xfd}, unzstd}, // CONFIG_KERNEL_ZSTD
}

// EmbeddedConfig extracts the kernel configuration that CONFIG_IKCONFIG
// embeds between the "IKCFG_ST" and "IKCFG_ED" markers as a gzip stream.
//
// img may be an uncompressed kernel (vmlinux) or a bzImage whose payload is
// compressed with gzip or zstd (CONFIG_KERNEL_GZIP, CONFIG_KERNEL_ZSTD).
// Like scripts/extract-ikconfig, every stream header in img is tried in
// turn; the first stream that decompresses and contains a valid IKCONFIG
// blob wins.
func EmbeddedConfig(img []byte) ([]byte, error) {
	if cfg, err := findIKConfig(img); err == nil {
		return cfg, nil
	}
	var lastErr error
	for _, p := range payloads {
		for off := 0; ; {
			i := bytes.Index(img[off:], p.magic)
			if i < 0 {
				break
			}
			pos := off + i
			off = pos + 1
			data, err := p.decompress(img[pos:], maxDecompressed)
			if err != nil {
				continue // not a real stream, keep looking
			}
			cfg, err := findIKConfig(data)
			if err == nil {
				return cfg, nil
			}
			lastErr = err
		}
	}
	if lastErr != nil {
		return nil, fmt.Errorf("kernel: no IKCONFIG found: %w", lastErr)
	}
	return nil, errors.New("kernel: no IKCONFIG found (no IKCFG_ST marker and no decompressible gzip or zstd stream containing one)")
}

// findIKConfig looks for IKCFG_ST<gzip data>IKCFG_ED in data and returns the
// decompressed configuration.
func findIKConfig(data []byte) ([]byte, error) {
	var lastErr error = errors.New("no IKCFG_ST marker")
	for off := 0; ; {
		i := bytes.Index(data[off:], ikcfgStart)
		if i < 0 {
			return nil, lastErr
		}
		start := off + i + len(ikcfgStart)
		off = start
		j := bytes.Index(data[start:], ikcfgEnd)
		if j < 0 {
			return nil, errors.New("IKCFG_ST without IKCFG_ED")
		}
		cfg, err := gunzip(data[start:start+j], maxDecompressed)
		if err != nil {
			lastErr = fmt.Errorf("IKCONFIG payload: %w", err)
			continue
		}
		return cfg, nil
	}
}

// gunzip decompresses the single gzip member at the start of b; trailing
// bytes after the member are ignored (a bzImage appends the size).
func gunzip(b []byte, limit int64) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	zr.Multistream(false)
	var out bytes.Buffer
	n, err := io.Copy(&out, io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("decompressed data exceeds %d bytes", limit)
	}
	if err := zr.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// unzstd decompresses the zstd frame at the start of b. What follows the
// frame (a bzImage appends the size) ends the stream: a reader that got
// the frame whole has found its end, so the error it then meets is not
// the frame's.
func unzstd(b []byte, limit int64) ([]byte, error) {
	zr, err := zstd.NewReader(bytes.NewReader(b), zstd.WithDecoderMaxMemory(uint64(limit)), zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	var out bytes.Buffer
	n, err := io.Copy(&out, io.LimitReader(zr, limit+1))
	if n > limit {
		return nil, fmt.Errorf("decompressed data exceeds %d bytes", limit)
	}
	if err != nil && !errors.Is(err, zstd.ErrMagicMismatch) {
		return nil, err
	}
	return out.Bytes(), nil
}

// KernelVersion returns the human-readable version string from the x86
// boot protocol setup header of a bzImage, e.g.
// "6.12.117-ncpos (ncpos@ncpos) #1 SMP PREEMPT_DYNAMIC Thu Jan  1 ...".
func KernelVersion(img []byte) (string, error) {
	// See Documentation/arch/x86/boot.rst: "HdrS" at 0x202, kernel_version
	// (pointer to a NUL-terminated string, minus 0x200) at 0x20E.
	if len(img) < 0x210 || string(img[0x202:0x206]) != "HdrS" {
		return "", errors.New("kernel: not a bzImage (no HdrS setup header)")
	}
	ptr := int(binary.LittleEndian.Uint16(img[0x20e:]))
	if ptr == 0 {
		return "", errors.New("kernel: setup header has no kernel_version")
	}
	off := ptr + 0x200
	if off >= len(img) {
		return "", fmt.Errorf("kernel: kernel_version offset %#x out of range", off)
	}
	end := bytes.IndexByte(img[off:], 0)
	if end < 0 {
		return "", errors.New("kernel: unterminated kernel_version string")
	}
	return string(img[off : off+end]), nil
}

// parseConfig parses a kernel .config (or config fragment) into a map from
// option name (with the CONFIG_ prefix) to its value as written, e.g.
// "CONFIG_E1000E" -> "y", "CONFIG_LOCALVERSION" -> `"-ncpos"`. Options
// recorded as "# CONFIG_X is not set" map to "n". Other comments and blank
// lines are ignored.
func parseConfig(data []byte) (map[string]string, error) {
	opts := make(map[string]string)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for lineno := 1; sc.Scan(); lineno++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
		case strings.HasPrefix(line, "#"):
			rest := strings.TrimSpace(strings.TrimPrefix(line, "#"))
			if name, ok := strings.CutSuffix(rest, " is not set"); ok && isConfigName(name) {
				opts[name] = "n"
			}
		default:
			name, val, ok := strings.Cut(line, "=")
			if !ok || !isConfigName(name) {
				return nil, fmt.Errorf("line %d: malformed config line %q", lineno, line)
			}
			opts[name] = val
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return opts, nil
}

func isConfigName(s string) bool {
	rest, ok := strings.CutPrefix(s, "CONFIG_")
	if !ok || rest == "" {
		return false
	}
	for _, r := range rest {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
