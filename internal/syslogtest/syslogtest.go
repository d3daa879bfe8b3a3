// Package syslogtest is a remote syslog collector for tests: it listens on
// loopback over UDP (RFC 5426), TCP (RFC 6587 octet counting) or TLS (RFC
// 5425) and keeps every message it receives.
package syslogtest

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ncpos/ncpos/internal/testcert"
)

// Receiver is a running collector.
type Receiver struct {
	Scheme string // udp, tcp or tls
	Addr   *net.TCPAddr
	CA     []byte // over TLS: the PEM a sender trusts the collector by

	mu   sync.Mutex
	msgs []string
}

// Listen starts a collector for scheme on 127.0.0.1, closed when the test
// ends. Over TLS its certificate is for certHosts (default 127.0.0.1):
// the names or addresses senders reach it by.
func Listen(t testing.TB, scheme string, certHosts ...string) *Receiver {
	t.Helper()
	r := &Receiver{Scheme: scheme}
	switch scheme {
	case "udp":
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pc.Close() })
		a := pc.LocalAddr().(*net.UDPAddr)
		r.Addr = &net.TCPAddr{IP: a.IP, Port: a.Port}
		go r.readDatagrams(pc)
	case "tcp", "tls":
		var ln net.Listener
		var err error
		if scheme == "tls" {
			if len(certHosts) == 0 {
				certHosts = []string{"127.0.0.1"}
			}
			var cert tls.Certificate
			cert, r.CA = testcert.New(t, certHosts...)
			ln, err = tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
		} else {
			ln, err = net.Listen("tcp", "127.0.0.1:0")
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		r.Addr = ln.Addr().(*net.TCPAddr)
		go r.accept(ln)
	default:
		t.Fatalf("syslogtest: scheme %q: want udp, tcp or tls", scheme)
	}
	return r
}

// Target is the configuration's syslog.target for this collector.
func (r *Receiver) Target() string { return r.Scheme + "://" + r.Addr.String() }

func (r *Receiver) add(m string) {
	r.mu.Lock()
	r.msgs = append(r.msgs, m)
	r.mu.Unlock()
}

func (r *Receiver) readDatagrams(pc net.PacketConn) {
	buf := make([]byte, 8192)
	for {
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		r.add(string(buf[:n]))
	}
}

// Serve gathers octet-counted messages from every connection ln takes
// (a collector started by its caller, on a port it chose).
func (r *Receiver) Serve(ln net.Listener) { r.accept(ln) }

func (r *Receiver) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			br := bufio.NewReader(c)
			for {
				lenText, err := br.ReadString(' ')
				if err != nil {
					return
				}
				n, err := strconv.Atoi(strings.TrimSpace(lenText))
				if err != nil || n < 1 || n > 1<<16 {
					return
				}
				b := make([]byte, n)
				if _, err := io.ReadFull(br, b); err != nil {
					return
				}
				r.add(string(b))
			}
		}()
	}
}

// Count is how many messages match re.
func (r *Receiver) Count(re *regexp.Regexp) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.msgs {
		if re.MatchString(m) {
			n++
		}
	}
	return n
}

// Find is the first message that matches re, or "".
func (r *Receiver) Find(re *regexp.Regexp) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.msgs {
		if re.MatchString(m) {
			return m
		}
	}
	return ""
}

// All is every message so far.
func (r *Receiver) All() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msgs...)
}
