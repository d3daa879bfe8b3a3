package events

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log"
	"net"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"
)

// Sender sends events and the daemons' log lines to a remote syslog
// collector: RFC 5424 messages, one per datagram over UDP (RFC 5426) or
// octet-counted over TCP (RFC 6587 §3.4.1, "LEN SP MSG", which survives
// newlines in a message) and over TLS (RFC 5425, the same framing). Send
// never blocks; the queue holds messages through an outage of the
// collector and drops the newest beyond that, counted, because statusd
// must keep running whatever happens to the network.
type Sender struct {
	Network string      // "udp" or "tcp"
	Addr    string      // host:port
	TLS     *tls.Config // over TCP: the collector's certificate is checked with it
	Header  Header

	queue   chan []byte
	sent    atomic.Uint64
	dropped atomic.Uint64
}

// QueueSize is how many messages wait while the collector is unreachable:
// the rings of the log collector hold about as many lines.
const QueueSize = 1024

// maxDatagram keeps UDP messages within what RFC 5426 says every receiver
// should accept.
const maxDatagram = 2048

// NewSender parses a target of the configuration ("udp://host:514",
// "tcp://host:514" or "tls://host:6514"). A tls:// collector must show a
// certificate for its host signed by one in ca (PEM).
func NewSender(target string, h Header, ca []byte) (*Sender, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("syslog target %q: %w", target, err)
	}
	if u.Scheme != "udp" && u.Scheme != "tcp" && u.Scheme != "tls" {
		return nil, fmt.Errorf("syslog target %q: want udp://, tcp:// or tls://", target)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("syslog target %q: no host", target)
	}
	if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
		return nil, fmt.Errorf("syslog target %q: no valid port", target)
	}
	s := &Sender{Network: u.Scheme, Addr: u.Host, Header: h, queue: make(chan []byte, QueueSize)}
	if u.Scheme == "tls" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("syslog target %q: no CA certificate (PEM) to check the collector with", target)
		}
		s.Network = "tcp"
		s.TLS = &tls.Config{RootCAs: pool, ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}
	}
	return s, nil
}

// Send queues e for the collector.
func (s *Sender) Send(e Event) { s.SendAs(e, s.Header) }

// SendAs queues e under another header: a daemon's log line carries the
// daemon's name and process ID.
func (s *Sender) SendAs(e Event, h Header) {
	msg := Format(e, h)
	select {
	case s.queue <- msg:
	default:
		s.dropped.Add(1)
	}
}

// Stats reports messages sent and dropped since start.
func (s *Sender) Stats() (sent, dropped uint64) {
	return s.sent.Load(), s.dropped.Load()
}

// Run sends queued messages until ctx is done, connecting (and after an
// error reconnecting, with backoff up to 30 s) as needed. It says when the
// collector becomes unreachable (at most once a minute) and, over TCP,
// when it is back, not at every retry: statusd's own log lines go to the
// same collector, and a line per failure would feed the queue it is
// failing to drain. Over UDP a datagram that leaves proves nothing.
func (s *Sender) Run(ctx context.Context) {
	var conn net.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	backoff := time.Second
	failing := false
	var complained time.Time
	fail := func(err error) {
		failing = true
		if time.Since(complained) >= time.Minute {
			complained = time.Now()
			log.Printf("syslog: %s://%s unreachable: %v; messages wait in the queue (%d at most)", s.scheme(), s.Addr, err, QueueSize)
		}
	}
	for {
		var msg []byte
		select {
		case <-ctx.Done():
			return
		case msg = <-s.queue:
		}
		for {
			if conn == nil {
				c, err := s.dial(ctx)
				if err != nil {
					fail(err)
					select {
					case <-ctx.Done():
						return
					case <-time.After(backoff):
					}
					backoff = min(2*backoff, 30*time.Second)
					continue
				}
				conn, backoff = c, time.Second
			}
			if err := s.write(conn, msg); err != nil {
				fail(err)
				conn.Close()
				conn = nil
				if s.Network == "udp" {
					// A datagram is gone either way (ICMP unreachable
					// from an earlier one); do not retry it forever.
					s.dropped.Add(1)
					break
				}
				continue
			}
			s.sent.Add(1)
			if failing && s.Network != "udp" {
				failing = false
				log.Printf("syslog: %s://%s reachable again", s.scheme(), s.Addr)
			}
			break
		}
	}
}

func (s *Sender) scheme() string {
	if s.TLS != nil {
		return "tls"
	}
	return s.Network
}

func (s *Sender) dial(ctx context.Context) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	if s.TLS == nil {
		return d.DialContext(ctx, s.Network, s.Addr)
	}
	td := tls.Dialer{NetDialer: &d, Config: s.TLS}
	return td.DialContext(ctx, "tcp", s.Addr)
}

func (s *Sender) write(c net.Conn, msg []byte) error {
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if s.Network == "udp" {
		if len(msg) > maxDatagram {
			msg = msg[:maxDatagram]
		}
		_, err := c.Write(msg)
		return err
	}
	frame := append([]byte(strconv.Itoa(len(msg))+" "), msg...)
	_, err := c.Write(frame)
	return err
}
