package events

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/internal/testcert"
)

func TestSenderUDP(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	s, err := NewSender("udp://"+pc.LocalAddr().String(), Header{Hostname: "box", AppName: "ncpos"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	log := NewLog(10, s)
	log.Addf(Warning, KindBypass, []string{"segment", "seg1"}, "segment seg1 in bypass")
	log.Addf(Notice, KindLink, []string{"port", "LAN1"}, "LAN1 link up")

	pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	for i, want := range []string{`<28>1 `, `<29>1 `} {
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			t.Fatal(err)
		}
		msg := string(buf[:n])
		if !strings.HasPrefix(msg, want) || !strings.Contains(msg, " box ncpos ") {
			t.Fatalf("datagram %d = %q, want prefix %q", i, msg, want)
		}
	}
	if !waitFor(func() bool { sent, _ := s.Stats(); return sent == 2 }) {
		t.Fatal("sender did not count two messages")
	}
}

// TestSenderTCP checks octet-counting framing and that the sender
// reconnects after the collector drops the connection.
func TestSenderTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s, err := NewSender("tcp://"+ln.Addr().String(), Header{Hostname: "box", AppName: "ncpos"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)

	readFrame := func(r *bufio.Reader) string {
		t.Helper()
		lenText, err := r.ReadString(' ')
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(lenText))
		if err != nil {
			t.Fatalf("frame length %q: %v", lenText, err)
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	s.Send(Event{Severity: Error, Kind: KindConfig, Message: "line one\nline two"})
	s.Send(Event{Severity: Info, Kind: KindBoot, Message: "second"})
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	if m := readFrame(r); !strings.HasPrefix(m, "<27>1 ") || !strings.HasSuffix(m, "line one\nline two") {
		t.Fatalf("first frame %q", m)
	}
	if m := readFrame(r); !strings.HasSuffix(m, " boot - second") {
		t.Fatalf("second frame %q", m)
	}
	c.Close()

	// The collector went away; later messages must arrive on a new
	// connection. The first write after the close may still succeed (TCP
	// learns of the close late), so keep sending until one arrives.
	got := make(chan string, 1)
	go func() {
		c2, err := ln.Accept()
		if err != nil {
			return
		}
		defer c2.Close()
		c2.SetReadDeadline(time.Now().Add(10 * time.Second))
		got <- readFrame(bufio.NewReader(c2))
	}()
	for i := 0; ; i++ {
		s.Send(Event{Severity: Notice, Kind: KindLink, Message: fmt.Sprintf("after reconnect %d", i)})
		select {
		case m := <-got:
			if !strings.Contains(m, "after reconnect") {
				t.Fatalf("after reconnect: %q", m)
			}
			return
		case <-time.After(500 * time.Millisecond):
		}
		if i > 20 {
			t.Fatal("no message after the collector reconnected")
		}
	}
}

func TestNewSenderRejects(t *testing.T) {
	for _, target := range []string{"", "http://h:514", "udp://:514", "udp://h", "tcp://h:99999", "tls://h:6514"} {
		if _, err := NewSender(target, Header{}, []byte("not a certificate")); err == nil {
			t.Errorf("NewSender(%q) succeeded", target)
		}
	}
}

func TestSenderDropsWhenFull(t *testing.T) {
	s, err := NewSender("udp://127.0.0.1:9", Header{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Not running: the queue fills and the rest is dropped, without blocking.
	for i := 0; i < QueueSize+10; i++ {
		s.Send(Event{Kind: KindLink})
	}
	if _, dropped := s.Stats(); dropped != 10 {
		t.Fatalf("dropped %d, want 10", dropped)
	}
}

func waitFor(f func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if f() {
			return true
		}
	}
	return false
}

// Over TLS the sender checks the collector's certificate: with the CA the
// messages arrive framed as over TCP; a collector with another
// certificate gets nothing, and the messages wait in the queue.
func TestSenderTLS(t *testing.T) {
	cert, caPEM := testcert.New(t, "127.0.0.1")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s, err := NewSender("tls://"+ln.Addr().String(), Header{Hostname: "box", AppName: "ncpos"}, caPEM)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	s.SendAs(Event{Severity: Info, Kind: "log", Message: "forwarding"}, Header{Hostname: "box", AppName: "forwarderd", ProcID: "42"})
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	lenText, err := r.ReadString(' ')
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(lenText))
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatal(err)
	}
	if m := string(b); !strings.HasPrefix(m, "<30>1 ") || !strings.HasSuffix(m, " box forwarderd 42 log - forwarding") {
		t.Fatalf("frame %q", m)
	}

	other, _ := testcert.New(t, "127.0.0.1")
	ln2, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{other}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln2.Close()
	s2, err := NewSender("tls://"+ln2.Addr().String(), Header{}, caPEM)
	if err != nil {
		t.Fatal(err)
	}
	go s2.Run(ctx)
	s2.Send(Event{Kind: KindLink, Message: "secret"})
	// What the collector saw of each connection: the handshake's
	// outcome, and any bytes that came after it.
	attempts := make(chan string, 10)
	go func() {
		for {
			c, err := ln2.Accept()
			if err != nil {
				return
			}
			c.SetDeadline(time.Now().Add(2 * time.Second))
			if err := c.(*tls.Conn).Handshake(); err != nil {
				attempts <- "refused: " + err.Error()
			} else {
				b := make([]byte, 512)
				n, _ := c.Read(b)
				attempts <- fmt.Sprintf("accepted, then read %q", b[:n])
			}
			c.Close()
		}
	}()
	// The sender must have tried, and its handshake must have failed.
	select {
	case a := <-attempts:
		if !strings.HasPrefix(a, "refused: ") {
			t.Fatalf("the sender took a collector with a certificate the CA did not sign: %s", a)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sender did not try the collector within 10 s")
	}
	if sent, _ := s2.Stats(); sent != 0 {
		t.Fatalf("sent %d messages to a collector with a certificate the CA did not sign", sent)
	}
}
