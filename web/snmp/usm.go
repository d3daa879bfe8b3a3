package snmp

import (
	"crypto/rand"
	"fmt"

	"github.com/gosnmp/gosnmp"
)

// User is an SNMPv3 user. The agent accepts only authPriv: a read-only
// view still tells an eavesdropper the box's ports, segments and bypass
// state, so nothing goes in clear.
type User struct {
	Name    string
	Auth    gosnmp.SnmpV3AuthProtocol
	AuthKey string // passphrase, localized to the engine ID (RFC 3414 A.2)
	Priv    gosnmp.SnmpV3PrivProtocol
	PrivKey string
}

// AuthProtocols and PrivProtocols are the names the configuration takes:
// the SHA-2 family of RFC 7860 and AES (RFC 3826; 192 and 256 bits with
// the key extension net-snmp uses).
var (
	AuthProtocols = map[string]gosnmp.SnmpV3AuthProtocol{
		"SHA-224": gosnmp.SHA224, "SHA-256": gosnmp.SHA256, "SHA-384": gosnmp.SHA384, "SHA-512": gosnmp.SHA512,
	}
	PrivProtocols = map[string]gosnmp.SnmpV3PrivProtocol{
		"AES": gosnmp.AES, "AES-192": gosnmp.AES192C, "AES-256": gosnmp.AES256C,
	}
)

// params returns the user's USM parameters with keys localized to engine.
// Localizing hashes a megabyte per key, so the agent does it once per user.
func (u User) params(engineID []byte) (*gosnmp.UsmSecurityParameters, error) {
	sp := &gosnmp.UsmSecurityParameters{
		UserName:                 u.Name,
		AuthenticationProtocol:   u.Auth,
		AuthenticationPassphrase: u.AuthKey,
		PrivacyProtocol:          u.Priv,
		PrivacyPassphrase:        u.PrivKey,
		AuthoritativeEngineID:    string(engineID),
	}
	if err := sp.InitSecurityKeys(); err != nil {
		return nil, fmt.Errorf("SNMPv3 user %q: %w", u.Name, err)
	}
	return sp, nil
}

// NewEngineID makes an RFC 3411 engine ID: the enterprise with the high
// bit set, format 5 (octets), then 8 random octets. It is kept on /perm so managers' localized keys and
// discovered engines stay valid across reboots.
func NewEngineID(enterprise uint32) ([]byte, error) {
	id := []byte{byte(enterprise>>24) | 0x80, byte(enterprise >> 16), byte(enterprise >> 8), byte(enterprise), 5}
	r := make([]byte, 8)
	if _, err := rand.Read(r); err != nil {
		return nil, err
	}
	return append(id, r...), nil
}
