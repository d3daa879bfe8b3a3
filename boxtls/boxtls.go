// Package boxtls is the TLS identity of an appliance: a key pair made on
// the box at its first boot and kept on /perm, never in the image, so no
// two boxes share a key and a lost card gives away only its own. Hosts pin
// the key by its fingerprint instead of trusting a certificate authority:
// a box in a remote rack has no name a public CA would vouch for.
package boxtls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ncpos/ncpos/internal/durable"
)

// file is where the identity lives in its directory: the certificate and
// its key in one PEM file (mode 0600), written in one atomic rename, so a
// power cut leaves either the old identity or the new one.
const file = "identity.pem"

// Identity is a box's certificate and what hosts compare it by.
type Identity struct {
	Cert        tls.Certificate
	Fingerprint string // SHA-256 of the public key, see Fingerprint
	Created     bool   // made now, not loaded
	// Replaced says why an identity that was there could not be used (it
	// was kept beside as File+".bad"); hosts that pinned it will refuse
	// the new one until told its fingerprint.
	Replaced string
	Path     string
}

// errDamaged is a kept identity that reads but does not parse.
var errDamaged = errors.New("damaged")

// Ensure loads the identity kept in dir, or makes one there when dir has
// none or only a damaged one: a box far away must stay reachable, and its
// new fingerprint is on its console. A file that cannot be read (EIO,
// EMFILE, a loop of links) is no damaged one: after a few tries Ensure
// returns the error and leaves the file as it is, since every host that
// pinned its key would refuse a new one.
func Ensure(dir, hostname string, now time.Time) (*Identity, error) {
	path := filepath.Join(dir, file)
	var replaced string
	switch id, err := load(path); {
	case err == nil:
		return id, nil
	case errors.Is(err, os.ErrNotExist):
	case !errors.Is(err, errDamaged):
		return nil, fmt.Errorf("reading the TLS identity: %w (left as it is)", err)
	default:
		replaced = err.Error()
		if rerr := durable.Rename(path, path+".bad"); rerr != nil {
			return nil, fmt.Errorf("%v, and keeping it aside failed: %w", err, rerr)
		}
	}
	certPEM, keyPEM, err := generate(hostname, now)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := durable.WriteFile(path, append(certPEM, keyPEM...), 0o600); err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	id, err := load(path)
	if err != nil {
		return nil, err
	}
	id.Created, id.Replaced = true, replaced
	return id, nil
}

func load(path string) (*Identity, error) {
	b, err := durable.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(b, b)
	if err != nil {
		return nil, fmt.Errorf("the TLS identity %s is %w: %v", path, errDamaged, err)
	}
	fp, err := Fingerprint(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("the TLS identity %s is %w: %v", path, errDamaged, err)
	}
	return &Identity{Cert: cert, Fingerprint: fp, Path: path}, nil
}

// FleetName is a name every box's certificate carries besides its own:
// a NOC's Prometheus scrapes a fleet in one job, whose TLS check takes one
// server name, with the certificates of the boxes the host has pinned as
// its CAs (see package fleet). Only a box in that list passes it.
const FleetName = "ncpos-appliance"

// generate makes an ECDSA P-256 key (fast on an Atom, understood by every
// client) and a self-signed certificate for it. The validity starts well
// before now, because a box whose clock battery died boots in the past.
func generate(hostname string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	notBefore := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	if hostname == "" {
		hostname = "ncpos"
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: hostname, Organization: []string{"ncpos appliance"}},
		DNSNames:     []string{hostname, hostname + ".local", FleetName},
		NotBefore:    notBefore,
		NotAfter:     now.AddDate(50, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), nil
}

// Fingerprint names a certificate's key: "sha256:" and the hex SHA-256 of
// its SubjectPublicKeyInfo, the value HTTP key pinning and Chromium's
// --ignore-certificate-errors-spki-list use (there in base64). It stays
// the same when the certificate is issued again for the same key.
func Fingerprint(certDER []byte) (string, error) {
	sum, err := spkiSum(certDER)
	if err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// SPKIBase64 is the same hash in base64, as Chromium takes it.
func SPKIBase64(certDER []byte) (string, error) {
	sum, err := spkiSum(certDER)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(sum[:]), nil
}

func spkiSum(certDER []byte) ([32]byte, error) {
	c, err := x509.ParseCertificate(certDER)
	if err != nil {
		return [32]byte{}, fmt.Errorf("parsing the certificate: %w", err)
	}
	return sha256.Sum256(c.RawSubjectPublicKeyInfo), nil
}

// ParseFingerprint checks a fingerprint given by a person (from a console
// or dashboard): "sha256:" and 64 hex digits, colons and case ignored.
func ParseFingerprint(s string) (string, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	v = strings.TrimPrefix(v, "sha256:")
	v = strings.ReplaceAll(v, ":", "")
	if b, err := hex.DecodeString(v); err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("fingerprint %q: want sha256: and 64 hex digits, as the box's console and dashboard show it", s)
	}
	return "sha256:" + v, nil
}
