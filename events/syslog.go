package events

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"
)

// Sender sends events to a remote syslog collector: RFC 5424 messages, one
// per datagram over UDP (RFC 5426) or octet-counted over TCP (RFC 6587
// §3.4.1, "LEN SP MSG", which survives newlines in a message). Send never
// blocks; the queue holds messages through a short outage of the collector
// and drops the newest beyond that, because statusd must keep running
// whatever happens to the network.
type Sender struct {
	Network string // "udp" or "tcp"
	Addr    string // host:port
	Header  Header

	queue   chan []byte
	sent    atomic.Uint64
	dropped atomic.Uint64
}

// QueueSize is how many messages wait while the collector is unreachable.
const QueueSize = 256

// maxDatagram keeps UDP messages within what RFC 5426 says every receiver
// should accept.
const maxDatagram = 2048

// NewSender parses a target of the configuration ("udp://host:514" or
// "tcp://host:514").
func NewSender(target string, h Header) (*Sender, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("syslog target %q: %w", target, err)
	}
	if u.Scheme != "udp" && u.Scheme != "tcp" {
		return nil, fmt.Errorf("syslog target %q: want udp:// or tcp://", target)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("syslog target %q: no host", target)
	}
	if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
		return nil, fmt.Errorf("syslog target %q: no valid port", target)
	}
	return &Sender{Network: u.Scheme, Addr: u.Host, Header: h, queue: make(chan []byte, QueueSize)}, nil
}

// Send queues e for the collector.
func (s *Sender) Send(e Event) {
	msg := Format(e, s.Header)
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
// error reconnecting, with backoff up to 30 s) as needed.
func (s *Sender) Run(ctx context.Context) {
	var conn net.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	backoff := time.Second
	for {
		var msg []byte
		select {
		case <-ctx.Done():
			return
		case msg = <-s.queue:
		}
		for {
			if conn == nil {
				d := net.Dialer{Timeout: 5 * time.Second}
				c, err := d.DialContext(ctx, s.Network, s.Addr)
				if err != nil {
					log.Printf("syslog: %v; retrying in %v", err, backoff)
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
				log.Printf("syslog: %v; reconnecting", err)
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
			break
		}
	}
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
