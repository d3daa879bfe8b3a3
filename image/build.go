package image

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/bootpart"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/internal/durable"
	"github.com/ncpos/ncpos/partition"
	"github.com/ncpos/ncpos/passwd"
	"github.com/ncpos/ncpos/signature"
)

// Options says what to build.
type Options struct {
	Config     *config.Config // validated configuration
	ConfigTOML []byte         // its text, as it goes into /etc/ncpos/ncpos.toml
	Kernel     []byte         // bzImage
	Size       int64          // disk size in bytes
	Output     string         // image file to write
	BuildID    string
	// ControlPassword is the box's control password (user ncpos). Only
	// its bcrypt hash goes into the image, on /perm; the image carries no
	// gokrazy password, so gokrazy serves nothing on the network.
	ControlPassword string
	// TestPrograms make a test image: they go under TestDir, and init is
	// built with the ncpos_testimage tag, the only init that starts them.
	// A production image has neither.
	TestPrograms []Program
	// SigningKey signs the build's manifest (root and kernel by size
	// and SHA-256), which goes onto the boot partition as bootpart.ManifestFile;
	// without one the manifest is unsigned, and an appliance refuses it
	// as an update.
	SigningKey ed25519.PrivateKey
	// SecurityVersion is the build's anti-rollback index, in its signed
	// manifest and its root (/etc/ncpos/security-version).
	SecurityVersion uint32
	// TrustedKeys are the keys the appliance takes updates from
	// (/etc/ncpos/update-keys); the signing key's is always among them.
	TrustedKeys []ed25519.PublicKey
	// QuickRoot packs the root with zstd level 3 instead of 19: a root
	// about a seventh larger, packed in a fortieth of the CPU time. The
	// boot tests build a dozen images on two cores beside their guests;
	// what the root holds is the same.
	QuickRoot bool
	Logf      func(format string, args ...any)
}

// Result describes a built image.
type Result struct {
	Output    string
	Size      int64 // image file size
	BytesUsed int64 // blocks allocated (the file is sparse)
	RootBytes int64 // root squashfs
	BootBytes int64 // boot partition content that is not zero
	DiskSig   uint32
	Cmdline   string
	BuildID   string
	Built     time.Time // orders builds: an update to an older one is a downgrade
	Signed    bool      // the manifest is signed
	Duration  time.Duration
}

// Programs lists what goes into the root for cfg: gokrazy-style init, the
// DHCP client for the management port, and each configured daemon.
func Programs(cfg *config.Config) []Program {
	progs := []Program{
		{Pkg: "github.com/ncpos/ncpos/services/init", Path: "/gokrazy/init"},
		{Pkg: "github.com/gokrazy/gokrazy/cmd/dhcp", Path: "/gokrazy/dhcp"},
	}
	for _, s := range cfg.Services {
		progs = append(progs, Program{Pkg: "github.com/ncpos/ncpos/services/" + s, Path: "/user/" + s})
	}
	return progs
}

// testDir is where a test image's test programs go.
const testDir = "/user/test"

// testImageTag is the build tag of a test image's init.
const testImageTag = "ncpos_testimage"

// programs are the image's programs: the production ones, and for a test
// image its test programs with the init that starts them.
func programs(o Options) ([]Program, error) {
	progs := Programs(o.Config)
	if len(o.TestPrograms) == 0 {
		return progs, nil
	}
	for _, p := range o.TestPrograms {
		if path.Dir(p.Path) != testDir {
			return nil, fmt.Errorf("test program %s: path %s is not in %s", p.Pkg, p.Path, testDir)
		}
	}
	for i := range progs {
		if progs[i].Path == "/gokrazy/init" {
			progs[i].Tags = append(progs[i].Tags, testImageTag)
		}
	}
	return append(progs, o.TestPrograms...), nil
}

// Build writes the image. It builds into a temporary file beside Output and
// renames it only when everything succeeded, so a failed build leaves no
// partial image behind.
func Build(ctx context.Context, o Options) (*Result, error) {
	start := time.Now()
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if err := CheckTools(); err != nil {
		return nil, err
	}
	if len(o.Kernel) == 0 {
		return nil, fmt.Errorf("no kernel")
	}
	// Both slots' kernel files, and the kernel the manifest signs, are
	// padded to one size, so an update writes a kernel in place.
	kernel, err := bootpart.PadKernel(o.Kernel)
	if err != nil {
		return nil, err
	}
	layout, err := NewLayout(o.Size)
	if err != nil {
		return nil, err
	}
	modDir, err := moduleDir()
	if err != nil {
		return nil, err
	}
	for _, s := range o.Config.Services {
		if _, err := os.Stat(filepath.Join(modDir, "services", s, "main.go")); err != nil {
			return nil, fmt.Errorf("services: %q is not built by this version of ncpos yet (no services/%s)", s, s)
		}
	}
	tmp, err := os.MkdirTemp("", "ncpos-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	id := sha256.Sum256([]byte(o.BuildID))
	diskSig := binary.LittleEndian.Uint32(id[:4])
	if diskSig == 0 {
		diskSig = 1
	}
	cmdline := Cmdline(diskSig, partition.RootA)

	// Hashed first: a weak password stops the build before any work.
	pwHash, err := passwd.Hash(o.ControlPassword)
	if err != nil {
		return nil, fmt.Errorf("control password: %w", err)
	}

	// Root file system.
	rootDir := filepath.Join(tmp, "root")
	progs, err := programs(o)
	if err != nil {
		return nil, err
	}
	if err := buildPrograms(ctx, modDir, rootDir, o.BuildID, progs, logf); err != nil {
		return nil, err
	}
	ca, _ := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	built := start.UTC().Truncate(time.Second)
	trusted := o.TrustedKeys
	if o.SigningKey != nil {
		trusted = append([]ed25519.PublicKey{o.SigningKey.Public().(ed25519.PublicKey)}, trusted...)
	}
	if err := stageRoot(rootDir, RootFiles{
		Hostname: o.Config.Hostname, ConfigTOML: o.ConfigTOML, BuildID: o.BuildID, CACerts: string(ca),
		Built: built, TrustedKeys: trusted, SecurityVersion: o.SecurityVersion,
	}); err != nil {
		return nil, fmt.Errorf("staging root: %w", err)
	}
	rootImg := filepath.Join(tmp, "root.squashfs")
	logf("mksquashfs")
	if err := mksquashfs(ctx, rootDir, rootImg, start.Unix(), o.QuickRoot); err != nil {
		return nil, err
	}

	manifest, err := buildManifest(rootImg, kernel, signature.Manifest{BuildID: o.BuildID, Built: built, SecurityVersion: o.SecurityVersion}, o.SigningKey)
	if err != nil {
		return nil, err
	}

	// Boot and perm file systems.
	bootImg := filepath.Join(tmp, "boot.fat")
	logf("boot partition (syslinux, systemd-boot)")
	if err := makeBoot(ctx, tmp, bootImg, layout.Parts[partition.Boot].Size, BootFiles{
		Kernel: kernel, DiskSig: diskSig, Default: bootpart.SlotA, Label: "NCPOS-BOOT", VolumeID: diskSig, Manifest: manifest,
	}); err != nil {
		return nil, err
	}
	permImg := filepath.Join(tmp, "perm.ext4")
	logf("perm partition (ext4)")
	if err := makePerm(ctx, tmp, permImg, layout.Parts[partition.Perm].Size, uuidFrom(id[4:20]), pwHash); err != nil {
		return nil, err
	}

	// Assemble the disk beside the output, then rename.
	out, err := os.CreateTemp(filepath.Dir(o.Output), "."+filepath.Base(o.Output)+".tmp-")
	if err != nil {
		return nil, err
	}
	done := false
	defer func() {
		if !done {
			out.Close()
			os.Remove(out.Name())
		}
	}()
	if err := out.Truncate(layout.Size); err != nil {
		return nil, err
	}
	if err := partitionTable(ctx, out.Name(), layout, diskSig); err != nil {
		return nil, err
	}
	if err := writeBootCode(out); err != nil {
		return nil, err
	}
	res := &Result{Output: o.Output, Size: layout.Size, DiskSig: diskSig, Cmdline: cmdline, BuildID: o.BuildID,
		Built: built, Signed: o.SigningKey != nil}
	for _, p := range []struct {
		img  string
		part int
		n    *int64
	}{{bootImg, partition.Boot, &res.BootBytes}, {rootImg, partition.RootA, &res.RootBytes}, {permImg, partition.Perm, nil}} {
		n, err := copyPartition(out, p.img, layout.Parts[p.part].Offset, layout.Parts[p.part].Size)
		if err != nil {
			return nil, fmt.Errorf("partition %d: %w", p.part, err)
		}
		if p.n != nil {
			*p.n = n
		}
	}
	if err := out.Sync(); err != nil {
		return nil, err
	}
	if err := out.Close(); err != nil {
		return nil, err
	}
	if err := durable.Rename(out.Name(), o.Output); err != nil {
		return nil, err
	}
	done = true
	var st unix.Stat_t
	if err := unix.Stat(o.Output, &st); err == nil {
		res.BytesUsed = st.Blocks * 512
	}
	res.Duration = time.Since(start)
	return res, nil
}

// uuidFrom formats 16 bytes as a UUID string.
func uuidFrom(b []byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
