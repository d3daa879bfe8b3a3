package snmp

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"
	"golang.org/x/time/rate"
)

// One source gets its burst of answer bytes and no more while the clock
// stands still; another source is still answered; the clock refills
// both. Every answer over the limit is left unsent and counted.
func TestRateLimitPerSource(t *testing.T) {
	a := newAgent(t)
	var now atomic.Int64 // the agent reads the clock on its own goroutine
	now.Store(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC).UnixNano())
	req, err := (&gosnmp.SnmpPacket{Version: gosnmp.Version2c, Community: testCommunity, PDUType: gosnmp.GetRequest,
		RequestID: 1, Variables: []gosnmp.SnmpPDU{{Name: ".1.3.6.1.2.1.1.5.0", Type: gosnmp.Null}}}).MarshalMsg()
	if err != nil {
		t.Fatal(err)
	}
	answer := len(a.Handle(req))
	// Room for 10 answers a source, 2 a second, and 15 in all.
	a.limit = newLimiter(2*rate.Limit(answer), 10*answer, 100*rate.Limit(answer), 15*answer, func() time.Time { return time.Unix(0, now.Load()) })
	agent, _ := net.ResolveUDPAddr("udp", serve(t, a)[len("udp:"):])
	ask := func(from string, n int) (answered int) {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(from)})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// A few dozen small datagrams fit the sockets' buffers: none is
		// lost on loopback, so every one missing was limited.
		for range n {
			if _, err := c.WriteTo(req, agent); err != nil {
				t.Fatal(err)
			}
		}
		buf := make([]byte, 2048)
		for {
			c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			if _, _, err := c.ReadFrom(buf); err != nil {
				return answered
			}
			answered++
		}
	}
	if got := ask("127.0.0.1", 30); got != 10 {
		t.Errorf("one source: %d answers, want its burst of 10", got)
	}
	if got := a.Stats.RateLimited.Load(); got != 20 {
		t.Errorf("rate_limited = %d, want 20", got)
	}
	if got := ask("127.0.0.2", 8); got != 5 {
		t.Errorf("another source: %d answers, want the 5 left of the total", got)
	}
	now.Add(int64(time.Second))
	if got := ask("127.0.0.1", 5); got != 2 {
		t.Errorf("a second later: %d answers, want the 2 a second gives", got)
	}
}

// Many forged sources together get no more than the total, and the
// limiter remembers a bounded number of them.
func TestRateLimitTotal(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	l := newLimiter(perSourceRate, perSourceBurst, totalRate, TotalBurst, func() time.Time { return now })
	sent := 0
	for i := range 5000 {
		if l.allow(&net.UDPAddr{IP: net.IPv4(10, byte(i>>16), byte(i>>8), byte(i)), Port: 161}, maxResponse) {
			sent += maxResponse
		}
	}
	if sent > TotalBurst || sent < TotalBurst-maxResponse {
		t.Errorf("5000 forged sources got %d bytes, want the total burst %d", sent, TotalBurst)
	}
	if len(l.sources) > maxSources {
		t.Errorf("%d sources remembered, want at most %d", len(l.sources), maxSources)
	}
}
