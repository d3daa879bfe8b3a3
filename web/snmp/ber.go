package snmp

import (
	"errors"
	"fmt"
)

// The agent reads a few header fields itself before gosnmp decodes the
// message: the version, and for SNMPv3 the flags and the USM user, whose
// keys gosnmp needs to check and decrypt the rest. These readers accept
// only definite lengths and never read past the datagram.

var errTruncated = errors.New("truncated BER")

// tlv splits one BER element off b.
func tlv(b []byte) (tag byte, content, rest []byte, err error) {
	if len(b) < 2 {
		return 0, nil, nil, errTruncated
	}
	tag, l := b[0], int(b[1])
	b = b[2:]
	if l&0x80 != 0 {
		n := l & 0x7f
		if n == 0 || n > 3 || len(b) < n {
			return 0, nil, nil, fmt.Errorf("BER length form 0x%02x not accepted", l)
		}
		l = 0
		for _, x := range b[:n] {
			l = l<<8 | int(x)
		}
		b = b[n:]
	}
	if l > len(b) {
		return 0, nil, nil, errTruncated
	}
	return tag, b[:l], b[l:], nil
}

func berInt(tag byte, c []byte) (int64, error) {
	if tag != 0x02 || len(c) == 0 || len(c) > 8 {
		return 0, errors.New("not a BER INTEGER")
	}
	v := int64(int8(c[0]))
	for _, x := range c[1:] {
		v = v<<8 | int64(x)
	}
	return v, nil
}

// header is what the agent reads of a message before decoding it.
type header struct {
	version  int64
	flags    byte   // SNMPv3 msgFlags
	secModel int64  // SNMPv3 msgSecurityModel
	engineID []byte // USM msgAuthoritativeEngineID
	boots    int64
	time     int64
	user     string
	// authAt and authLen locate msgAuthenticationParameters in the
	// message, to check the digest over the message with it zeroed.
	authAt, authLen int
}

// peekHeader reads the version and, for SNMPv3, the global header and the
// USM security parameters.
func peekHeader(msg []byte) (header, error) {
	var h header
	tag, body, _, err := tlv(msg)
	if err != nil || tag != 0x30 {
		return h, errors.New("not a SEQUENCE")
	}
	tag, c, body, err := tlv(body)
	if err != nil {
		return h, err
	}
	if h.version, err = berInt(tag, c); err != nil {
		return h, fmt.Errorf("version: %w", err)
	}
	if h.version != 3 {
		return h, nil
	}
	tag, global, body, err := tlv(body)
	if err != nil || tag != 0x30 {
		return h, errors.New("SNMPv3 header is not a SEQUENCE")
	}
	var fields [4][]byte
	var tags [4]byte
	for i := range fields {
		if tags[i], fields[i], global, err = tlv(global); err != nil {
			return h, fmt.Errorf("SNMPv3 header: %w", err)
		}
	}
	if tags[2] != 0x04 || len(fields[2]) != 1 {
		return h, errors.New("SNMPv3 msgFlags is not one octet")
	}
	h.flags = fields[2][0]
	if h.secModel, err = berInt(tags[3], fields[3]); err != nil {
		return h, fmt.Errorf("msgSecurityModel: %w", err)
	}
	tag, sec, _, err := tlv(body)
	if err != nil || tag != 0x04 {
		return h, errors.New("msgSecurityParameters is not an OCTET STRING")
	}
	tag, usm, _, err := tlv(sec)
	if err != nil || tag != 0x30 {
		return h, errors.New("USM parameters are not a SEQUENCE")
	}
	var u [5][]byte
	var ut [5]byte
	for i := range u {
		if ut[i], u[i], usm, err = tlv(usm); err != nil {
			return h, fmt.Errorf("USM parameters: %w", err)
		}
	}
	if ut[0] != 0x04 || ut[3] != 0x04 || ut[4] != 0x04 {
		return h, errors.New("USM engine ID, user name or authentication parameters are not an OCTET STRING")
	}
	h.authAt, h.authLen = cap(msg)-cap(u[4]), len(u[4])
	h.engineID, h.user = u[0], string(u[3])
	if h.boots, err = berInt(ut[1], u[1]); err != nil {
		return h, fmt.Errorf("msgAuthoritativeEngineBoots: %w", err)
	}
	if h.time, err = berInt(ut[2], u[2]); err != nil {
		return h, fmt.Errorf("msgAuthoritativeEngineTime: %w", err)
	}
	return h, nil
}
