package snmp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/gosnmp/gosnmp"
)

// Agent answers GET, GETNEXT and GETBULK from its view; SET gets
// notWritable. Anything it does not accept (a bad packet, a wrong
// community, an unknown user, a wrong key) is dropped without an answer
// and counted. An authentic SNMPv3 request outside the time window is
// counted too, and answered with a Report (usmStatsNotInTimeWindows)
// when it is reportable, as RFC 3414 3.2 says, so that the manager can
// resynchronize; one that is not reportable is dropped.
type Agent struct {
	community []byte // empty: SNMPv2c off
	users     map[string]*gosnmp.UsmSecurityParameters
	engineID  []byte
	boots     uint32
	start     time.Time
	view      func() *View
	Stats     Stats
	now       func() time.Time
	limit     *limiter
}

// Config is what an agent serves and whom it trusts.
type Config struct {
	Community string // SNMPv2c community; "" turns SNMPv2c off
	Users     []User
	EngineID  []byte
	Boots     uint32 // snmpEngineBoots: how often the engine (re)started
	// View returns the objects to serve; it is called once per request.
	View func() *View
}

// NewAgent localizes every user's keys to the engine ID.
func NewAgent(c Config) (*Agent, error) {
	if n := len(c.EngineID); n < 5 || n > 32 {
		return nil, fmt.Errorf("SNMP engine ID of %d octets, want 5 to 32", n)
	}
	a := &Agent{community: []byte(c.Community), users: map[string]*gosnmp.UsmSecurityParameters{},
		engineID: c.EngineID, boots: c.Boots, start: time.Now(), view: c.View, now: time.Now}
	a.limit = newLimiter(perSourceRate, perSourceBurst, totalRate, TotalBurst, a.clock)
	for _, u := range c.Users {
		if _, dup := a.users[u.Name]; dup {
			return nil, fmt.Errorf("SNMPv3 user %q configured twice", u.Name)
		}
		sp, err := u.params(c.EngineID)
		if err != nil {
			return nil, err
		}
		a.users[u.Name] = sp
	}
	return a, nil
}

// clock is a.now, read late so that tests can replace it.
func (a *Agent) clock() time.Time { return a.now() }

// EngineID is the agent's snmpEngineID, which SNMPv3 trap receivers must
// be told.
func (a *Agent) EngineID() []byte { return a.engineID }

// Stats counts what the agent received, as SNMPv2-MIB's snmp group and
// SNMP-USER-BASED-SM-MIB's usmStats count it, and what it answered.
type Stats struct {
	InPkts, OutPkts, BadVersions, BadCommunityNames, ASNParseErrs atomic.Uint64
	UnsupportedSecLevels, NotInTimeWindows, UnknownUserNames      atomic.Uint64
	UnknownEngineIDs, WrongDigests, DecryptionErrors, UnknownPDUs atomic.Uint64
	Sets                                                          atomic.Uint64 // refused: the agent is read-only
	RateLimited                                                   atomic.Uint64 // not answered: over a source's or the total rate
}

// maxResponse bounds an answer: a GETBULK is cut to fit, as RFC 3416 4.2.3
// allows, and never exceeds what fits one unfragmented datagram on the
// management LAN unless the manager said it takes more.
const maxResponse = 1472

// engineTime is snmpEngineTime: seconds since the engine started.
func (a *Agent) engineTime() uint32 { return uint32(a.now().Sub(a.start) / time.Second) }

// sysUpTime in hundredths of a second.
func (a *Agent) sysUpTime() uint32 { return uint32(a.now().Sub(a.start) / (10 * time.Millisecond)) }

// Serve answers requests on conn until ctx is done.
func (a *Agent) Serve(ctx context.Context, conn net.PacketConn) error {
	go func() {
		<-ctx.Done()
		conn.Close()
	}()
	buf := make([]byte, 65536)
	for {
		n, from, err := conn.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("SNMP: %w", err)
		}
		resp := a.Handle(buf[:n])
		if resp == nil {
			continue
		}
		if !a.limit.allow(from, len(resp)) {
			a.Stats.RateLimited.Add(1)
			continue
		}
		if _, err := conn.WriteTo(resp, from); err == nil {
			a.Stats.OutPkts.Add(1)
		}
	}
}

// Handle answers one datagram, or returns nil to drop it. A message that
// makes the decoder panic is counted as malformed: one bad packet must not
// take the agent down with it (the fuzz test calls handle and sees any).
func (a *Agent) Handle(msg []byte) (resp []byte) {
	defer func() {
		if recover() != nil {
			a.Stats.ASNParseErrs.Add(1)
			resp = nil
		}
	}()
	return a.handle(msg)
}

func (a *Agent) handle(msg []byte) []byte {
	a.Stats.InPkts.Add(1)
	h, err := peekHeader(msg)
	if err != nil {
		a.Stats.ASNParseErrs.Add(1)
		return nil
	}
	switch h.version {
	case 1: // SNMPv2c on the wire
		return a.handleV2c(msg)
	case 3:
		return a.handleV3(msg, h)
	}
	a.Stats.BadVersions.Add(1)
	return nil
}

func (a *Agent) handleV2c(msg []byte) []byte {
	if len(a.community) == 0 {
		a.Stats.BadVersions.Add(1)
		return nil
	}
	g := &gosnmp.GoSNMP{Version: gosnmp.Version2c}
	pkt, err := g.SnmpDecodePacket(bytes.Clone(msg))
	if err != nil {
		a.Stats.ASNParseErrs.Add(1)
		return nil
	}
	if subtle.ConstantTimeCompare([]byte(pkt.Community), a.community) != 1 {
		a.Stats.BadCommunityNames.Add(1)
		return nil
	}
	out, ok := a.answer(pkt)
	if !ok {
		return nil
	}
	out.Version, out.Community = gosnmp.Version2c, pkt.Community
	return a.marshal(out, pkt, maxResponse)
}

const (
	flagAuth       = 0x01
	flagPriv       = 0x02
	flagReportable = 0x04
	usmModel       = 3
	// timeWindow is RFC 3414 3.2.7's 150 seconds.
	timeWindow = 150
)

var (
	usmStatsNotInTimeWindows = mustOID("1.3.6.1.6.3.15.1.1.2.0")
	usmStatsUnknownEngineIDs = mustOID("1.3.6.1.6.3.15.1.1.4.0")
)

func (a *Agent) handleV3(msg []byte, h header) []byte {
	if h.secModel != usmModel {
		a.Stats.UnknownPDUs.Add(1)
		return nil
	}
	if h.user == "" && len(h.engineID) == 0 && h.flags&(flagAuth|flagPriv) == 0 {
		return a.discovery(msg, h)
	}
	tmpl, ok := a.users[h.user]
	if !ok {
		a.Stats.UnknownUserNames.Add(1)
		return nil
	}
	if h.flags&(flagAuth|flagPriv) != flagAuth|flagPriv {
		a.Stats.UnsupportedSecLevels.Add(1)
		return nil
	}
	if !bytes.Equal(h.engineID, a.engineID) {
		a.Stats.UnknownEngineIDs.Add(1)
		return nil
	}
	if !authentic(msg, h, tmpl) {
		a.Stats.WrongDigests.Add(1)
		return nil
	}
	g := &gosnmp.GoSNMP{Version: gosnmp.Version3, SecurityModel: gosnmp.UserSecurityModel,
		MsgFlags: gosnmp.AuthPriv, SecurityParameters: tmpl.Copy()}
	pkt, err := g.UnmarshalTrap(bytes.Clone(msg), true)
	if err != nil {
		// The digest was right: the privacy key or the payload is not.
		a.Stats.DecryptionErrors.Add(1)
		return nil
	}
	if h.boots != int64(a.boots) || absDiff(h.time, int64(a.engineTime())) > timeWindow {
		a.Stats.NotInTimeWindows.Add(1)
		if h.flags&flagReportable == 0 {
			return nil
		}
		rep := &gosnmp.SnmpPacket{PDUType: gosnmp.Report, Variables: []gosnmp.SnmpPDU{
			{Name: usmStatsNotInTimeWindows.String(), Type: gosnmp.Counter32, Value: uint32(a.Stats.NotInTimeWindows.Load())}}}
		return a.marshalV3(rep, pkt, tmpl, gosnmp.AuthNoPriv)
	}
	out, ok := a.answer(pkt)
	if !ok {
		return nil
	}
	return a.marshalV3(out, pkt, tmpl, gosnmp.AuthPriv)
}

// authentic checks a message's digest (RFC 3414 6.3.2, RFC 7860 4.2):
// the HMAC of the whole message with its authentication parameters
// zeroed, truncated to the protocol's length. gosnmp checks it too, but
// does not say whether a message it refused failed this or decryption.
func authentic(msg []byte, h header, sp *gosnmp.UsmSecurityParameters) bool {
	n, ok := macLen[sp.AuthenticationProtocol]
	if !ok || h.authLen != n || h.authAt+n > len(msg) {
		return false
	}
	m := bytes.Clone(msg)
	clear(m[h.authAt : h.authAt+n])
	mac := hmac.New(sp.AuthenticationProtocol.HashType().New, sp.SecretKey)
	mac.Write(m)
	return hmac.Equal(mac.Sum(nil)[:n], msg[h.authAt:h.authAt+n])
}

// macLen is the truncated HMAC's length per protocol (RFC 7860 4.1).
var macLen = map[gosnmp.SnmpV3AuthProtocol]int{
	gosnmp.SHA224: 16, gosnmp.SHA256: 24, gosnmp.SHA384: 32, gosnmp.SHA512: 48,
}

// discovery answers RFC 3414 4's engine discovery: a Report that tells the
// manager the engine ID, boots and time to use.
func (a *Agent) discovery(msg []byte, h header) []byte {
	g := &gosnmp.GoSNMP{Version: gosnmp.Version3, SecurityModel: gosnmp.UserSecurityModel,
		MsgFlags: gosnmp.NoAuthNoPriv, SecurityParameters: &gosnmp.UsmSecurityParameters{}}
	pkt, err := g.UnmarshalTrap(bytes.Clone(msg), true)
	if err != nil || h.flags&flagReportable == 0 {
		a.Stats.ASNParseErrs.Add(1)
		return nil
	}
	a.Stats.UnknownEngineIDs.Add(1)
	rep := &gosnmp.SnmpPacket{PDUType: gosnmp.Report, Variables: []gosnmp.SnmpPDU{
		{Name: usmStatsUnknownEngineIDs.String(), Type: gosnmp.Counter32, Value: uint32(a.Stats.UnknownEngineIDs.Load())}}}
	return a.marshalV3(rep, pkt, &gosnmp.UsmSecurityParameters{}, gosnmp.NoAuthNoPriv)
}

func (a *Agent) marshalV3(out, req *gosnmp.SnmpPacket, tmpl *gosnmp.UsmSecurityParameters, flags gosnmp.SnmpV3MsgFlags) []byte {
	sp := tmpl.Copy().(*gosnmp.UsmSecurityParameters)
	sp.AuthoritativeEngineID = string(a.engineID)
	sp.AuthoritativeEngineBoots = a.boots
	sp.AuthoritativeEngineTime = a.engineTime()
	if flags&gosnmp.AuthPriv == gosnmp.AuthPriv {
		salt := make([]byte, 8)
		rand.Read(salt)
		sp.PrivacyParameters = salt
	}
	if flags&gosnmp.AuthNoPriv == 0 {
		sp.UserName = ""
	}
	out.Version, out.MsgFlags, out.SecurityModel, out.SecurityParameters = gosnmp.Version3, flags, gosnmp.UserSecurityModel, sp
	out.MsgID = req.MsgID
	out.ContextEngineID, out.ContextName = string(a.engineID), req.ContextName
	limit := maxResponse
	if req.MsgMaxSize > uint32(limit) {
		limit = int(min(req.MsgMaxSize, 65507))
	}
	return a.marshal(out, req, limit)
}

// marshal encodes an answer, cutting a GETBULK's list until it fits limit
// and answering tooBig when even one variable does not.
func (a *Agent) marshal(out, req *gosnmp.SnmpPacket, limit int) []byte {
	out.RequestID = req.RequestID
	if out.PDUType == 0 {
		out.PDUType = gosnmp.GetResponse
	}
	for {
		b, err := out.MarshalMsg()
		if err != nil {
			a.Stats.UnknownPDUs.Add(1)
			return nil
		}
		if len(b) <= limit {
			return b
		}
		if req.PDUType == gosnmp.GetBulkRequest && len(out.Variables) > 1 {
			out.Variables = out.Variables[:len(out.Variables)/2]
			continue
		}
		out.Variables, out.Error, out.ErrorIndex = nil, gosnmp.TooBig, 0
	}
}

func absDiff(x, y int64) int64 {
	if x > y {
		return x - y
	}
	return y - x
}

// requestID makes an ID for a notification.
func requestID() uint32 {
	var b [4]byte
	rand.Read(b[:])
	return binary.BigEndian.Uint32(b[:]) & 0x7fffffff
}
