package boxtls

import (
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
)

// MismatchError is a box that presented another key than the one pinned.
type MismatchError struct {
	Box, Want, Got, PinnedIn string
}

func (e *MismatchError) Error() string {
	where := "the -fingerprint given"
	if e.PinnedIn != "" {
		where = e.PinnedIn
	}
	return fmt.Sprintf("%s presented the key %s, but %s pins %s: if the box was reinstalled or its /perm replaced, "+
		"read its fingerprint on its serial console or dashboard and run again with -fingerprint %s; "+
		"otherwise something between here and the box is intercepting the connection", e.Box, e.Got, where, e.Want, e.Got)
}

// Pin decides which key a box may present to a host command: the one
// given on the command line, else the one pinned in Known, else (first
// contact) whichever it presents, which is then pinned.
type Pin struct {
	Box   string // the name the host knows the box by (as given to -host)
	Known *Known // nil: pin only for this run
	Given string // a fingerprint the operator gave, "" for none
	// Logf tells the operator what was pinned on first contact.
	Logf func(format string, args ...any)

	mu   sync.Mutex
	want string
	from string // where want came from
	init bool
}

// TLSConfig is the client configuration that checks the key. It does not
// verify a certificate chain: the pin is the trust.
func (p *Pin) TLSConfig() *tls.Config {
	return &tls.Config{
		InsecureSkipVerify: true, // replaced by VerifyConnection's pin check
		MinVersion:         tls.VersionTLS12,
		VerifyConnection:   p.verify,
	}
}

func (p *Pin) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the box presented no certificate")
	}
	got, err := Fingerprint(cs.PeerCertificates[0].Raw)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.load(); err != nil {
		return err
	}
	switch {
	case p.want == "":
		// First contact: trust what the box presents, and remember it.
		if p.Known != nil {
			if err := p.Known.Set(p.Box, got); err != nil {
				return err
			}
			p.from = p.Known.Path
		}
		p.want = got
		if p.Logf != nil {
			p.Logf("first contact with %s: pinned its key %s (compare it with the box's console or dashboard)", p.Box, got)
		}
		return nil
	case got != p.want:
		return &MismatchError{Box: p.Box, Want: p.want, Got: got, PinnedIn: p.from}
	}
	return nil
}

// load finds the key to expect, once (p.mu held).
func (p *Pin) load() error {
	if p.init {
		return nil
	}
	p.init = true
	if p.Given != "" {
		fp, err := ParseFingerprint(p.Given)
		if err != nil {
			return err
		}
		p.want = fp
		if p.Known != nil {
			// What the operator checked replaces what was pinned.
			return p.Known.Set(p.Box, fp)
		}
		return nil
	}
	if p.Known == nil {
		return nil
	}
	fp, ok, err := p.Known.Get(p.Box)
	if err != nil {
		return err
	}
	if ok {
		p.want, p.from = fp, p.Known.Path
	}
	return nil
}
