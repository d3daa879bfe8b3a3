// Package signature signs what `ncpos build` builds and checks it on the
// appliance before an update is made bootable. A build's manifest names
// its root file system and kernel by size and SHA-256; an Ed25519 key kept
// on the build host signs the manifest, and every image carries the public
// keys it trusts, so that a box accepts only builds from the hosts its
// operator chose. The SHA-256 that gokrazy echoes back after a write only
// catches corruption; this says who built what is written.
package signature

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Blob is one part of a build, as the appliance receives it.
type Blob struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // hex
}

// BlobOf describes b.
func BlobOf(b []byte) Blob {
	sum := sha256.Sum256(b)
	return Blob{Size: int64(len(b)), SHA256: hex.EncodeToString(sum[:])}
}

// Check says whether b is the blob described, naming what differs.
func (bl Blob) Check(what string, b []byte) error {
	if int64(len(b)) != bl.Size {
		return fmt.Errorf("%s of %d bytes, the signed build's is %d", what, len(b), bl.Size)
	}
	if got := BlobOf(b).SHA256; got != bl.SHA256 {
		return fmt.Errorf("%s has SHA-256 %s, the signed build's is %s", what, got, bl.SHA256)
	}
	return nil
}

// Manifest is what a signature covers.
type Manifest struct {
	BuildID string    `json:"build_id"`
	Built   time.Time `json:"built"` // orders builds: a later one is newer
	// SecurityVersion is the build's anti-rollback index, as verified
	// boot's rollback index: a box refuses any build below the highest
	// security version it has made permanent, downgrade or not. Raised
	// by the builder when a release fixes a vulnerability.
	SecurityVersion uint32 `json:"security_version,omitempty"`
	Root            Blob   `json:"root"` // the root squashfs as sent
	Kernel          Blob   `json:"kernel"`
}

// Signed is a manifest with its signature, as it is stored in an image and
// sent to an appliance. Manifest is kept as the bytes signed (base64 in
// JSON), so that no re-encoding can change what is checked.
type Signed struct {
	Manifest  []byte `json:"manifest"`
	Key       string `json:"key,omitempty"` // the signer's public key, as FormatKey writes it
	Signature []byte `json:"signature,omitempty"`
}

// Errors a check can end with, for callers that tell them apart.
var (
	ErrUnsigned   = errors.New("the build is not signed")
	ErrUntrusted  = errors.New("the build is signed by a key this appliance does not trust")
	ErrForged     = errors.New("the build's signature does not match its manifest (forged or altered)")
	ErrDowngrade  = errors.New("the build is older than the one the appliance runs")
	ErrSameBuild  = errors.New("the appliance already runs this build")
	ErrRollback   = errors.New("the build's security version is below the appliance's floor")
	errNoManifest = errors.New("no manifest")
)

// Sign signs m with key.
func Sign(key ed25519.PrivateKey, m Manifest) ([]byte, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("signing key of %d bytes, want an Ed25519 key", len(key))
	}
	body, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	s := Signed{Manifest: body, Key: FormatKey(key.Public().(ed25519.PublicKey)), Signature: ed25519.Sign(key, body)}
	return json.MarshalIndent(s, "", "  ")
}

// Unsigned is a manifest without a signature, for tests and for images
// built without a key.
func Unsigned(m Manifest) ([]byte, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return json.MarshalIndent(Signed{Manifest: body}, "", "  ")
}

// Verify checks a signed manifest against the trusted keys and returns the
// manifest it vouches for.
func Verify(data []byte, trusted []ed25519.PublicKey) (*Manifest, error) {
	var s Signed
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("reading the signed manifest: %w", err)
	}
	if len(s.Manifest) == 0 {
		return nil, fmt.Errorf("reading the signed manifest: %w", errNoManifest)
	}
	if len(s.Signature) == 0 || s.Key == "" {
		return nil, ErrUnsigned
	}
	key, err := parseKey(s.Key)
	if err != nil {
		return nil, fmt.Errorf("the signer's key: %w", err)
	}
	known := false
	for _, t := range trusted {
		if key.Equal(t) {
			known = true
			break
		}
	}
	if !known {
		return nil, fmt.Errorf("%w (%s)", ErrUntrusted, s.Key)
	}
	if !ed25519.Verify(key, s.Manifest, s.Signature) {
		return nil, ErrForged
	}
	var m Manifest
	dec = json.NewDecoder(bytes.NewReader(s.Manifest))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("reading the signed manifest: %w", err)
	}
	if m.BuildID == "" || m.Built.IsZero() || m.Root.Size <= 0 || m.Kernel.Size <= 0 {
		return nil, fmt.Errorf("the signed manifest lacks a build ID, a build time, a root or a kernel: %+v", m)
	}
	return &m, nil
}

// CheckOrder refuses a candidate build that is not newer than the running
// one, unless downgrade allows an older one. A running build of unknown
// age (zero time) takes any.
func CheckOrder(running string, runningBuilt time.Time, m *Manifest, downgrade bool) error {
	if m.BuildID == running {
		return fmt.Errorf("%w (%s)", ErrSameBuild, running)
	}
	return checkDate(running, runningBuilt, m, downgrade)
}

// CheckFloor refuses a build whose security version is below floor, the
// highest one the appliance has made permanent, whatever downgrade says:
// a downgrade may return to an older build of the same security version,
// never to one a later release fixed a vulnerability of.
func CheckFloor(m *Manifest, floor uint32) error {
	if m.SecurityVersion < floor {
		return fmt.Errorf("%w: %s has security version %d, the appliance runs nothing below %d since it made a build of %d permanent (a downgrade does not lower it)",
			ErrRollback, m.BuildID, m.SecurityVersion, floor, floor)
	}
	return nil
}

func checkDate(running string, runningBuilt time.Time, m *Manifest, downgrade bool) error {
	if runningBuilt.IsZero() || m.Built.After(runningBuilt) || downgrade {
		return nil
	}
	return fmt.Errorf("%w: %s was built %s, the running %s %s; ask for a downgrade to install it",
		ErrDowngrade, m.BuildID, m.Built.UTC().Format(time.RFC3339), running, runningBuilt.UTC().Format(time.RFC3339))
}

// keyPrefix marks a key in a keys file, as in SSH's authorized keys.
const keyPrefix = "ncpos-ed25519 "

// FormatKey writes a public key as one line of a keys file.
func FormatKey(k ed25519.PublicKey) string {
	return keyPrefix + base64.StdEncoding.EncodeToString(k)
}

// parseKey reads a key FormatKey wrote.
func parseKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, keyPrefix) {
		return nil, fmt.Errorf("key %q does not start with %q", s, strings.TrimSpace(keyPrefix))
	}
	fields := strings.Fields(strings.TrimPrefix(s, keyPrefix))
	if len(fields) == 0 {
		return nil, fmt.Errorf("key %q has no key after %q", s, strings.TrimSpace(keyPrefix))
	}
	b, err := base64.StdEncoding.DecodeString(fields[0])
	if err != nil {
		return nil, fmt.Errorf("key %q: %w", s, err)
	}
	if len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("key %q of %d bytes, want %d", s, len(b), ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}

// ParseKeys reads a keys file: one key per line, blank lines and lines
// starting with # ignored. A line that is no key is an error naming it.
func ParseKeys(text []byte) ([]ed25519.PublicKey, error) {
	var keys []ed25519.PublicKey
	for i, line := range strings.Split(string(text), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := parseKey(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}
