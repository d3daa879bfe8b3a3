// Package radius signs people in against the RADIUS servers a network
// team already runs for its switches and routers (RFC 2865, PAP), with
// the Message-Authenticator of RFC 3579 on every request. An answer must
// carry the Response Authenticator of RFC 2865, and a Message-Authenticator
// that matches where it carries one (FreeRADIUS 3.2.1, Debian 12's, sends
// none with an Access-Accept). The reply's Class or Filter-Id names the
// role; a reply without one opens nothing.
//
// The packets are layeh.com/radius's; this package adds the order of the
// servers, the retries, the Message-Authenticator and the roles.
package radius

import (
	"context"
	"crypto/hmac"
	"crypto/md5"
	"errors"
	"fmt"
	"net"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2869"

	"github.com/ncpos/ncpos/web/accounts"
)

// Server is one RADIUS server: host:port and the secret it shares with
// the box.
type Server struct {
	Addr   string
	Secret string
}

// Client asks its servers in order.
type Client struct {
	Servers []Server
	// Timeout is how long one try waits for an answer; Retries how many
	// more tries a server gets before the next is asked.
	Timeout time.Duration
	Retries int
	// Roles maps a Class or Filter-Id value to a role.
	Roles map[string]accounts.Role
	// NASIdentifier names the box to the servers (its hostname).
	NASIdentifier string
}

var (
	// ErrRejected is a server's Access-Reject, or an Access-Accept that
	// names no role this box knows: no local account is tried after it.
	ErrRejected = errors.New("refused by the RADIUS server")
	// ErrNoAnswer is no server answering in time (or answering only
	// with packets that fail their authenticators): only then are the
	// local accounts tried.
	ErrNoAnswer = errors.New("no RADIUS server answered")
)

// Result is an accepted login.
type Result struct {
	Role   accounts.Role
	Server string // the server that accepted
	// Class is the Class or Filter-Id value the role came from.
	Class string
}

// Authenticate asks the servers in order whether user's password is pw.
// A rejection comes back as ErrRejected, with the server's reason where
// it gave one; a box no server answers gets ErrNoAnswer, with what each
// server did.
func (c *Client) Authenticate(ctx context.Context, user, pw string) (Result, error) {
	var why []error
	for _, s := range c.Servers {
		for try := 0; try <= c.Retries; try++ {
			res, err := c.ask(ctx, s, user, pw)
			if err == nil || errors.Is(err, ErrRejected) {
				return res, err
			}
			if ctx.Err() != nil {
				return Result{}, fmt.Errorf("%w: %w", ErrNoAnswer, ctx.Err())
			}
			why = append(why, fmt.Errorf("%s try %d: %w", s.Addr, try+1, err))
		}
	}
	return Result{}, fmt.Errorf("%w: %w", ErrNoAnswer, errors.Join(why...))
}

// ask sends one Access-Request to s and waits up to the timeout.
func (c *Client) ask(ctx context.Context, s Server, user, pw string) (Result, error) {
	secret := []byte(s.Secret)
	req := radius.New(radius.CodeAccessRequest, secret)
	if err := rfc2865.UserName_SetString(req, user); err != nil {
		return Result{}, err
	}
	if err := rfc2865.UserPassword_SetString(req, pw); err != nil {
		return Result{}, err
	}
	rfc2865.ServiceType_Set(req, rfc2865.ServiceType_Value_AdministrativeUser)
	if c.NASIdentifier != "" {
		rfc2865.NASIdentifier_SetString(req, c.NASIdentifier)
	}
	if err := sign(req, req.Authenticator); err != nil {
		return Result{}, err
	}
	tctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	cl := radius.Client{MaxPacketErrors: 10}
	reply, err := cl.Exchange(tctx, req, s.Addr)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
			return Result{}, fmt.Errorf("no answer in %v", c.Timeout)
		}
		return Result{}, err
	}
	if err := verify(reply, req.Authenticator); err != nil {
		return Result{}, err
	}
	switch reply.Code {
	case radius.CodeAccessAccept:
	case radius.CodeAccessReject:
		if msg := rfc2865.ReplyMessage_GetString(reply); msg != "" {
			return Result{}, fmt.Errorf("%w %s: %q", ErrRejected, s.Addr, msg)
		}
		return Result{}, fmt.Errorf("%w %s", ErrRejected, s.Addr)
	case radius.CodeAccessChallenge:
		return Result{}, fmt.Errorf("%w %s: it asked a challenge, which a login to this box cannot answer", ErrRejected, s.Addr)
	default:
		return Result{}, fmt.Errorf("answer of code %v", reply.Code)
	}
	res := Result{Server: s.Addr}
	var seen []string
	for _, a := range reply.Attributes {
		if a.Type != rfc2865.Class_Type && a.Type != rfc2865.FilterID_Type {
			continue
		}
		seen = append(seen, string(a.Attribute))
		if r, ok := c.Roles[string(a.Attribute)]; ok && r > res.Role {
			res.Role, res.Class = r, string(a.Attribute)
		}
	}
	if res.Role == accounts.None {
		return Result{}, fmt.Errorf("%w %s: the answer names no role of this box (Class/Filter-Id %q)", ErrRejected, s.Addr, seen)
	}
	return res, nil
}

// sign adds the Message-Authenticator (RFC 3579 3.2): an HMAC-MD5, keyed
// with the secret, of the whole packet with the attribute zeroed and the
// request's authenticator in place.
func sign(p *radius.Packet, reqAuth [16]byte) error {
	var zero [16]byte
	p.Attributes.Del(rfc2869.MessageAuthenticator_Type)
	if err := rfc2869.MessageAuthenticator_Add(p, zero[:]); err != nil {
		return err
	}
	sum, err := messageAuthenticator(p, reqAuth)
	if err != nil {
		return err
	}
	rfc2869.MessageAuthenticator_Set(p, sum)
	return nil
}

func messageAuthenticator(p *radius.Packet, reqAuth [16]byte) ([]byte, error) {
	q := *p
	q.Authenticator = reqAuth
	q.Attributes = nil
	var zero [16]byte
	for _, a := range p.Attributes {
		if a.Type == rfc2869.MessageAuthenticator_Type {
			a = &radius.AVP{Type: a.Type, Attribute: zero[:]}
		}
		q.Attributes = append(q.Attributes, a)
	}
	b, err := q.MarshalBinary()
	if err != nil {
		return nil, err
	}
	m := hmac.New(md5.New, p.Secret)
	m.Write(b)
	return m.Sum(nil), nil
}

// verify checks an answer's Message-Authenticator where it carries one.
// The Response Authenticator is already checked by the exchange.
func verify(reply *radius.Packet, reqAuth [16]byte) error {
	got, err := rfc2869.MessageAuthenticator_Lookup(reply)
	if err != nil {
		return nil
	}
	want, err := messageAuthenticator(reply, reqAuth)
	if err != nil {
		return err
	}
	if !hmac.Equal(got, want) {
		return errors.New("the answer's Message-Authenticator does not match: a wrong secret, or a forged answer")
	}
	return nil
}
