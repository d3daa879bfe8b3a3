package update

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ncpos/ncpos/internal/durable"
	"github.com/ncpos/ncpos/signature"
	"github.com/ncpos/ncpos/sysinfo"
)

// Gate is what an update passes on the box before gokrazy writes
// any of it: a manifest signed by a key the running build trusts, for a
// newer build (or a downgrade asked for), and then parts that are exactly
// the ones it names. The root is received in full and checked before it
// is handed on, so a forged, unsigned or cut-off upload writes nothing.
type Gate struct {
	Trusted []ed25519.PublicKey
	Running string    // the running build's ID
	Built   time.Time // and its build time; zero: unknown (any build is newer)
	// SecurityVersion is the running build's anti-rollback index, and
	// FloorFile where the box keeps the highest one it has made
	// permanent (/perm/ncpos/security-floor): no build below that floor
	// is taken, downgrade or not.
	SecurityVersion uint32
	FloorFile       string
	// Meminfo is the /proc/meminfo the root is received against: it
	// must fit in memory with a quarter of it left, well clear of the
	// watchdog's memory check.
	Meminfo string

	mu      sync.Mutex
	pending *signature.Manifest // accepted, its parts not yet all written
	rootOK  bool                // its root is on the inactive partition
	busy    string              // the part of it being received or written, "" when none
	abort   func()              // stops that part's upload
	ended   chan struct{}       // closed when that part's claim is released
}

// abortWait is how long a new manifest waits for an upload it aborted to
// end: a kernel being written to the boot partition is let finish.
const abortWait = 30 * time.Second

// errBusy is a step refused while a part of the pending update is
// being received or written: one update at a time, so that a root is
// never taken for another build's and two uploads never hold a root in
// memory each. A new manifest aborts such an upload instead (a client
// that lost its connection starts again with one) and is refused only
// when the upload does not end.
var errBusy = errors.New("an update is under way")

// errNoManifest is a part sent before its manifest.
var errNoManifest = errors.New("no signed manifest accepted: send the build's manifest (PUT /api/v1/update/manifest) first")

// busyErr says what holds the gate; g.mu is held.
func (g *Gate) busyErr() error {
	return fmt.Errorf("%w: the %s of build %s is being received or written; wait until it ends", errBusy, g.busy, g.pending.BuildID)
}

// Files of the running build the gate reads (LoadGate), as package
// image writes them.
const (
	TrustedKeysFile     = "etc/ncpos/update-keys"
	BuiltFile           = "etc/ncpos/built"
	BuildIDFile         = "etc/ncpos/build-id"
	SecurityVersionFile = "etc/ncpos/security-version"
	// floorFile is under the root given, on /perm.
	floorFile = "perm/ncpos/security-floor"
)

// LoadGate reads the running build's trusted keys, ID and build
// time under root ("/" on the appliance).
func LoadGate(root string) (*Gate, error) {
	text, err := os.ReadFile(filepath.Join(root, TrustedKeysFile))
	if err != nil {
		return nil, fmt.Errorf("update keys: %w", err)
	}
	keys, err := signature.ParseKeys(text)
	if err != nil {
		return nil, fmt.Errorf("update keys %s: %w", filepath.Join(root, TrustedKeysFile), err)
	}
	g := &Gate{Trusted: keys, Meminfo: filepath.Join(root, "proc/meminfo"), FloorFile: filepath.Join(root, floorFile)}
	if b, err := os.ReadFile(filepath.Join(root, SecurityVersionFile)); err == nil {
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("security version %s: %w", filepath.Join(root, SecurityVersionFile), err)
		}
		g.SecurityVersion = uint32(v)
	}
	if b, err := os.ReadFile(filepath.Join(root, BuildIDFile)); err == nil {
		g.Running = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile(filepath.Join(root, BuiltFile)); err == nil {
		if g.Built, err = time.Parse(time.RFC3339, strings.TrimSpace(string(b))); err != nil {
			return nil, fmt.Errorf("build time %s: %w", filepath.Join(root, BuiltFile), err)
		}
	}
	return g, nil
}

// accept checks a signed manifest and makes it the pending update, unless
// only asked to check it (a dry run), which leaves the pending one alone.
// permanent says whether the running build is the one the box boots by
// default (not a test boot): its security version is then part of the
// floor.
func (g *Gate) accept(data []byte, downgrade, check, permanent bool) (*signature.Manifest, error) {
	m, err := signature.Verify(data, g.Trusted)
	if err == nil {
		var floor uint32
		if floor, err = g.Floor(permanent); err == nil {
			err = signature.CheckFloor(m, floor)
		}
	}
	if err == nil {
		err = signature.CheckOrder(g.Running, g.Built, m, downgrade)
	}
	if check {
		return m, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.abortLocked(); err != nil {
		return nil, err
	}
	g.pending, g.rootOK = nil, false
	if err != nil {
		return nil, err
	}
	g.pending = m
	return m, nil
}

// Floor is the lowest security version the box takes: the highest it
// has recorded as made permanent, and the running build's when it runs
// permanently (a box installed with it, or one whose records were lost).
// A floor file that cannot be read or parsed is an error, never a floor
// of 0.
func (g *Gate) Floor(permanent bool) (uint32, error) {
	floor := uint32(0)
	if permanent {
		floor = g.SecurityVersion
	}
	if g.FloorFile == "" {
		return floor, nil
	}
	b, err := durable.ReadFile(g.FloorFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return floor, nil
	case err != nil:
		return 0, fmt.Errorf("reading the security floor: %w", err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("the security floor %s is damaged (%q): %w; the box takes no update until it is mended", g.FloorFile, b, err)
	}
	return max(floor, uint32(v)), nil
}

// raiseFloor records that the running build is made permanent: the floor
// becomes its security version when that is higher.
func (g *Gate) raiseFloor() error {
	floor, err := g.Floor(false)
	if err != nil || g.FloorFile == "" || g.SecurityVersion <= floor {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(g.FloorFile), 0o755); err != nil {
		return err
	}
	return durable.WriteFile(g.FloorFile, []byte(strconv.FormatUint(uint64(g.SecurityVersion), 10)+"\n"), 0o644)
}

// drop forgets the pending update, aborting the upload of a part of it.
func (g *Gate) drop() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.abortLocked(); err != nil {
		return err
	}
	g.pending, g.rootOK = nil, false
	return nil
}

// abortLocked aborts the upload under way, if any, and waits for its
// claim to end (g.mu held, and released while it waits).
func (g *Gate) abortLocked() error {
	for g.busy != "" {
		abort, ended := g.abort, g.ended
		g.mu.Unlock()
		abort()
		select {
		case <-ended:
			g.mu.Lock()
		case <-time.After(abortWait):
			g.mu.Lock()
			if g.busy != "" {
				return g.busyErr()
			}
		}
	}
	return nil
}

// claim holds the gate while part ("root", "kernel") of the pending
// update is received and written, and returns the manifest it belongs to.
// Until release is called, another part and a test boot are refused with
// ErrBusy, and a new manifest calls abort (which must make the
// upload end soon) and waits for the release. release(true) after a root
// records that this manifest's root is on the inactive partition, unless
// another manifest has been accepted since.
func (g *Gate) claim(part string, abort func()) (m *signature.Manifest, release func(written bool), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.busy != "" {
		return nil, nil, g.busyErr()
	}
	if g.pending == nil {
		return nil, nil, errNoManifest
	}
	m, g.busy, g.abort = g.pending, part, abort
	ended := make(chan struct{})
	g.ended = ended
	if part == "root" {
		g.rootOK = false
	}
	var once sync.Once
	return m, func(written bool) {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.busy, g.abort, g.ended = "", nil, nil
			if part == "root" && g.pending == m {
				g.rootOK = written
			}
			close(ended)
		})
	}, nil
}

// manifest is the pending update's manifest, or why there is none.
func (g *Gate) manifest() (*signature.Manifest, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pending == nil {
		return nil, errNoManifest
	}
	return g.pending, nil
}

// minFreeAfterRoot is the share of memory that must stay available while
// a root is held in memory.
const minFreeAfterRoot = 0.25

// roomFor says whether n bytes can be held in memory now.
func (g *Gate) roomFor(n int64) error {
	total, avail, err := sysinfo.Memory(g.Meminfo)
	if err != nil {
		return fmt.Errorf("reading the memory available: %w", err)
	}
	if float64(avail)-float64(n) < minFreeAfterRoot*float64(total) {
		return fmt.Errorf("not enough memory to receive a root of %d bytes: %d of %d bytes available, and %.0f %% must stay so", n, avail, total, 100*minFreeAfterRoot)
	}
	return nil
}

// afterRoot says whether a step that follows the root (testboot) may go
// on.
func (g *Gate) afterRoot(step string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.busy != "" {
		return g.busyErr()
	}
	if g.pending == nil || !g.rootOK {
		return fmt.Errorf("update step %s: no verified root written: send the signed manifest and the root it names first", step)
	}
	return nil
}

// Busy says which step of an update holds the gate ("" when none).
func (g *Gate) Busy() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.busy
}
