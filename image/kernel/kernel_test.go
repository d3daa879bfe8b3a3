package kernel

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// required lists options the ncpos appliance depends on; each must be
// built in (=y). Keep in sync with config.fragment.
var required = []string{
	"XDP_SOCKETS", "BPF_SYSCALL", "BPF_JIT", "BPF_JIT_ALWAYS_ON",
	"IKCONFIG", "IKCONFIG_PROC",
	"SQUASHFS", "SQUASHFS_ZLIB", "SQUASHFS_XZ", "SQUASHFS_ZSTD",
	"EXT4_FS", "VFAT_FS", "NLS_CODEPAGE_437", "NLS_ISO8859_1", "NLS_UTF8",
	"MSDOS_PARTITION", "EFI_PARTITION",
	"ATA_PIIX", "PATA_OLDPIIX", "SATA_AHCI",
	"USB_STORAGE", "USB_XHCI_HCD", "USB_EHCI_HCD",
	"VIRTIO_PCI", "VIRTIO_BLK", "VIRTIO_NET", "SCSI_VIRTIO",
	"E1000", "E1000E", "IGB", "IGC", "IXGBE", "I40E", "ICE", "R8169",
	"MLX5_CORE", "MLX5_CORE_EN",
	"ITCO_WDT", "I6300ESB_WDT", "SP5100_TCO", "W83627HF_WDT", "IT87_WDT",
	"F71808E_WDT", "WATCHDOG_SYSFS",
	"SENSORS_CORETEMP", "SENSORS_NCT6775",
	"I2C_CHARDEV", "I2C_I801", "GPIO_CDEV",
	"SERIAL_8250_CONSOLE", "KEXEC_FILE",
	"BRIDGE", "VETH", "NET_CLS_BPF", "NET_ACT_BPF", "NET_SCH_INGRESS",
	"NET_ACT_MIRRED",
	"EFI_STUB", "DEVTMPFS", "DEVTMPFS_MOUNT",
}

// mustBeOff lists options that must not be enabled.
var mustBeOff = []string{"MODULES", "DEBUG_INFO_BTF"}

var embeddedConfig = sync.OnceValues(func() ([]byte, error) {
	return EmbeddedConfig(bzImage)
})

func parsedEmbeddedConfig(t *testing.T) map[string]string {
	t.Helper()
	raw, err := embeddedConfig()
	if err != nil {
		t.Fatalf("extracting IKCONFIG from bzImage: %v", err)
	}
	opts, err := parseConfig(raw)
	if err != nil {
		t.Fatalf("parsing embedded config: %v", err)
	}
	return opts
}

func TestEmbeddedConfigMatchesCommittedConfig(t *testing.T) {
	raw, err := embeddedConfig()
	if err != nil {
		t.Fatalf("extracting IKCONFIG from bzImage: %v", err)
	}
	if bytes.Equal(raw, config) {
		return
	}
	t.Errorf("config embedded in bzImage (%d bytes) differs from committed config file (%d bytes); rerun build.sh",
		len(raw), len(config))
	emb, err1 := parseConfig(raw)
	com, err2 := parseConfig(config)
	if err1 != nil || err2 != nil {
		t.Fatalf("parse: %v / %v", err1, err2)
	}
	for _, d := range diffConfigs(emb, com) {
		t.Errorf("  %s", d)
	}
}

func diffConfigs(a, b map[string]string) []string {
	var out []string
	for k, va := range a {
		if vb, ok := b[k]; !ok || va != vb {
			out = append(out, k+": bzImage="+va+" config="+orAbsent(vb, ok))
		}
	}
	for k, vb := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k+": bzImage=<absent> config="+vb)
		}
	}
	sort.Strings(out)
	return out
}

func orAbsent(v string, ok bool) string {
	if !ok {
		return "<absent>"
	}
	return v
}

func TestFragmentOptionsInEmbeddedConfig(t *testing.T) {
	frag, err := os.ReadFile("config.fragment")
	if err != nil {
		t.Fatal(err)
	}
	want, err := parseConfig(frag)
	if err != nil {
		t.Fatalf("config.fragment: %v", err)
	}
	if len(want) == 0 {
		t.Fatal("config.fragment contains no options")
	}
	got := parsedEmbeddedConfig(t)
	for _, name := range sortedKeys(want) {
		w := want[name]
		g, ok := got[name]
		if w == "n" {
			// Invisible symbols that are off do not appear at all.
			if ok && g != "n" {
				t.Errorf("%s: fragment wants it unset, embedded config has %s=%s", name, name, g)
			}
			continue
		}
		if g != w {
			t.Errorf("%s: fragment wants %s, embedded config has %s", name, w, orAbsent(g, ok))
		}
	}
}

func TestRequiredOptions(t *testing.T) {
	got := parsedEmbeddedConfig(t)
	for _, name := range required {
		if v := got["CONFIG_"+name]; v != "y" {
			t.Errorf("CONFIG_%s must be built in (=y), embedded config has %q", name, v)
		}
	}
	for _, name := range mustBeOff {
		if v, ok := got["CONFIG_"+name]; ok && v != "n" {
			t.Errorf("CONFIG_%s must not be set, embedded config has %q", name, v)
		}
	}
	if v := got["CONFIG_LOCALVERSION"]; v != `"-ncpos"` {
		t.Errorf("CONFIG_LOCALVERSION = %s, want \"-ncpos\"", v)
	}
}

func TestVersion(t *testing.T) {
	rel := Release()
	if !strings.HasPrefix(rel, "6.12.") || !strings.HasSuffix(rel, "-ncpos") {
		t.Errorf("Release() = %q, want 6.12.*-ncpos", rel)
	}
	v, err := KernelVersion(bzImage)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bzImage: %d bytes, version %q", len(bzImage), v)
	if want := rel + " (ncpos@ncpos) #1 "; !strings.HasPrefix(v, want) {
		t.Errorf("bzImage kernel_version = %q, want prefix %q (VERSION file stale or KBUILD_BUILD_* not applied)", v, want)
	}
	if !strings.HasSuffix(v, " 2026-01-01 00:00:00 UTC") {
		t.Errorf("bzImage kernel_version = %q, want fixed KBUILD_BUILD_TIMESTAMP from build.sh", v)
	}
}

func TestAccessorsReturnCopies(t *testing.T) {
	b := BzImage()
	if len(b) == 0 || !bytes.Equal(b, bzImage) {
		t.Fatal("BzImage() does not return the embedded image")
	}
	b[0] ^= 0xff
	if bytes.Equal(b, bzImage) {
		t.Error("BzImage() returned the embedded slice, not a copy")
	}
	c := Config()
	if !bytes.Equal(c, config) || !bytes.HasPrefix(c, []byte("#\n# Automatically generated file; DO NOT EDIT.")) {
		t.Error("Config() does not return the embedded .config")
	}
}

// --- unit tests on synthetic input ----------------------------------------

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zs(t *testing.T, b []byte) []byte {
	t.Helper()
	zw, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer zw.Close()
	return zw.EncodeAll(b, nil)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestEmbeddedConfigSynthetic(t *testing.T) {
	cfg := []byte("#\n# test\n#\nCONFIG_FOO=y\n# CONFIG_BAR is not set\nCONFIG_S=\"x\"\n")
	blob := cat([]byte("IKCFG_ST"), gz(t, cfg), []byte("IKCFG_ED"))
	vmlinux := cat(bytes.Repeat([]byte{0x90}, 1000), blob, bytes.Repeat([]byte{0xcc}, 1000))
	// A fake bzImage: setup code, a bogus gzip magic, then the compressed
	// "vmlinux" followed by a 4-byte size like the real piggy.o.
	fake := cat([]byte("MZ setup code..."), []byte{0x1f, 0x8b, 0x08, 0, 1, 2, 3}, []byte("more"),
		gz(t, vmlinux), []byte{1, 2, 3, 4}, []byte("trailer"))
	// A gzip stream without IKCONFIG before the real one.
	fake2 := cat(gz(t, []byte("nothing here")), fake)
	// The same with the payload in zstd (CONFIG_KERNEL_ZSTD).
	fakeZstd := cat([]byte("MZ setup code..."), []byte{0x28, 0xb5, 0x2f, 0xfd, 0, 1}, []byte("more"),
		zs(t, vmlinux), []byte{1, 2, 3, 4}, []byte("trailer"))

	for _, tc := range []struct {
		name    string
		in      []byte
		want    []byte
		wantErr bool
	}{
		{"uncompressed", vmlinux, cfg, false},
		{"gzip-payload", fake, cfg, false},
		{"decoy-stream-first", fake2, cfg, false},
		{"empty", nil, nil, true},
		{"no-markers", gz(t, []byte("plain kernel")), nil, true},
		{"start-without-end", gz(t, cat([]byte("IKCFG_ST"), gz(t, cfg))), nil, true},
		{"corrupt-payload", cat([]byte("IKCFG_ST"), []byte("not gzip"), []byte("IKCFG_ED")), nil, true},
		{"truncated-stream", fake[:len(fake)/2], nil, true},
		{"zstd-payload", fakeZstd, cfg, false},
		{"truncated-zstd-stream", fakeZstd[:len(fakeZstd)-len("trailer")-20], nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EmbeddedConfig(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("EmbeddedConfig succeeded (%q), want error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Errorf("EmbeddedConfig = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseConfig(t *testing.T) {
	got, err := parseConfig([]byte(`#
# Automatically generated file; DO NOT EDIT.
# Linux/x86 6.12.0 Kernel Configuration
#
CONFIG_CC_VERSION_TEXT="gcc (Debian 12.2.0-14) 12.2.0"
CONFIG_E1000E=y
CONFIG_NR_CPUS=64
# CONFIG_MODULES is not set

# some comment
CONFIG_LOCALVERSION="-ncpos"
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"CONFIG_CC_VERSION_TEXT": `"gcc (Debian 12.2.0-14) 12.2.0"`,
		"CONFIG_E1000E":          "y",
		"CONFIG_NR_CPUS":         "64",
		"CONFIG_MODULES":         "n",
		"CONFIG_LOCALVERSION":    `"-ncpos"`,
	}
	if len(got) != len(want) {
		t.Errorf("got %d options %v, want %d", len(got), got, len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for _, bad := range []string{"FOO=y\n", "CONFIG_=y\n", "CONFIG_X y\n", "CONFIG_A-B=y\n"} {
		if _, err := parseConfig([]byte(bad)); err == nil {
			t.Errorf("ParseConfig(%q) succeeded, want error", bad)
		}
	}
}

func TestKernelVersionSynthetic(t *testing.T) {
	img := make([]byte, 0x400)
	copy(img[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(img[0x20e:], 0x100) // string at 0x300
	copy(img[0x300:], "6.12.1-test (u@h) #1\x00junk")
	v, err := KernelVersion(img)
	if err != nil || v != "6.12.1-test (u@h) #1" {
		t.Errorf("KernelVersion = %q, %v", v, err)
	}
	if _, err := KernelVersion(img[:0x300]); err == nil {
		t.Error("KernelVersion on truncated image succeeded")
	}
	img[0x202] = 'X'
	if _, err := KernelVersion(img); err == nil {
		t.Error("KernelVersion without HdrS succeeded")
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
