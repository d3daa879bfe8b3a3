package web

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// tlsHandshake is the first byte a TLS client sends: the content type of
// a handshake record (RFC 8446, section 5.1; the same in TLS 1.0–1.2).
// No HTTP/1 request line starts with it.
const tlsHandshake = 0x16

// plainAndTLS serves the plain HTTP port. A browser that typed
// http://box:8488/ is sent to https://box:8488/, the port it asked for:
// behind a port forward (ncpos vm, a NAT in front of the box) the box
// cannot know which outside port leads to its HTTPS port, but the one
// the client used leads here. So a connection that opens with a TLS
// handshake gets the HTTPS server on this port too; the others get the
// plain server, which only redirects.
type plainAndTLS struct {
	ln           net.Listener
	https, plain *http.Server
}

// serveSplit starts serving ln: TLS connections with https, the others
// with plain. A connection has wait to send its first byte.
func serveSplit(ln net.Listener, https, plain *http.Server, wait time.Duration) *plainAndTLS {
	tlsQ, plainQ := newConnQueue(ln.Addr()), newConnQueue(ln.Addr())
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				tlsQ.end(err)
				plainQ.end(err)
				return
			}
			go func() {
				c.SetReadDeadline(time.Now().Add(wait))
				var b [1]byte
				if _, err := io.ReadFull(c, b[:]); err != nil {
					c.Close()
					return
				}
				c.SetReadDeadline(time.Time{})
				pc := &peekedConn{Conn: c, first: b[0]}
				if b[0] == tlsHandshake {
					tlsQ.put(pc)
				} else {
					plainQ.put(pc)
				}
			}()
		}
	}()
	p := &plainAndTLS{ln: ln, https: https, plain: plain}
	go func() { logServe(ln.Addr(), https.Serve(tls.NewListener(tlsQ, https.TLSConfig))) }()
	go func() { logServe(ln.Addr(), plain.Serve(plainQ)) }()
	return p
}

// Shutdown stops both servers as http.Server.Shutdown does.
func (p *plainAndTLS) Shutdown(ctx context.Context) error {
	err := p.ln.Close()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return errors.Join(err, p.https.Shutdown(ctx), p.plain.Shutdown(ctx))
}

// Close closes both servers and their connections at once.
func (p *plainAndTLS) Close() error {
	p.ln.Close()
	return errors.Join(p.https.Close(), p.plain.Close())
}

// peekedConn gives back the byte read to tell TLS from plain HTTP.
type peekedConn struct {
	net.Conn
	first  byte
	peeked bool // first has been read again
}

func (c *peekedConn) Read(b []byte) (int, error) {
	if c.peeked || len(b) == 0 {
		return c.Conn.Read(b)
	}
	c.peeked = true
	b[0] = c.first
	return 1, nil
}

// connQueue is a net.Listener fed with connections accepted elsewhere.
type connQueue struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	err   error // why it ended; set before done is closed
}

func newConnQueue(addr net.Addr) *connQueue {
	return &connQueue{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

// put hands c to Accept, or closes it once the queue has ended.
func (q *connQueue) put(c net.Conn) {
	select {
	case q.conns <- c:
	case <-q.done:
		c.Close()
	}
}

func (q *connQueue) end(err error) {
	q.once.Do(func() {
		q.err = err
		close(q.done)
	})
}

func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.conns:
		return c, nil
	case <-q.done:
		return nil, q.err
	}
}

func (q *connQueue) Close() error {
	q.end(net.ErrClosed)
	return nil
}

func (q *connQueue) Addr() net.Addr { return q.addr }
