package web

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ncpos/ncpos/web/reply"
)

// serveLoopback serves f's handler on a loopback port with the server's
// limits, as statusd does on the management port.
func serveLoopback(t *testing.T, f *fixture) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := f.srv.guard()
	hs := g.lim.httpServer(f.srv.Handler())
	go hs.Serve(g.conns.wrap(ln, false))
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

// slowConn opens a connection from the loopback address src and sends
// the start of a request whose headers never end.
func slowConn(src, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: appliance.test\r\nX-Slow: "); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// refused reads what the server answered a slow connection within wait:
// its 503, or nothing if it keeps waiting for the headers.
func refused(c net.Conn, wait time.Duration) (bool, string) {
	c.SetReadDeadline(time.Now().Add(wait))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil && line == "" {
		return false, err.Error()
	}
	return strings.HasPrefix(line, "HTTP/1.1 503"), line
}

func operatorClient(src string) *http.Client {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

func heapAndStacks() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// Thousands of connections that never finish their headers, from one
// address and from many, neither stop the dashboard from answering the
// operator nor make statusd's memory grow with their number. Without the
// caps each would hold a goroutine and its buffers until it gave up.
func TestSlowClientsLeaveDashboardServing(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	// Timeouts longer than the test: the caps alone must do the work.
	f.srv.Limits = Limits{ReadHeaderTimeout: 5 * time.Minute, ReadTimeout: 5 * time.Minute, IdleTimeout: 5 * time.Minute}
	addr := serveLoopback(t, f)
	g := f.srv.guard()
	before := heapAndStacks()

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// One address: past its cap, each is refused at once.
	const fromOne = 2000
	var mu sync.Mutex
	var wg sync.WaitGroup
	held, answered := 0, 0
	for i := range fromOne {
		c, err := slowConn("127.0.0.1", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		wg.Go(func() {
			r, why := refused(c, 2*time.Second)
			mu.Lock()
			defer mu.Unlock()
			if r {
				answered++
				c.Close()
			} else if strings.Contains(why, "timeout") {
				held++
			}
		})
	}
	wg.Wait()
	if held != defaultLimits.MaxConnsPerClient || answered != fromOne-held {
		t.Errorf("from one address: %d held, %d refused with 503; want %d held, the rest refused", held, answered, defaultLimits.MaxConnsPerClient)
	}

	// Many addresses, each under its cap but together over the server's:
	// the oldest waiting connections of the biggest holders make room, and
	// the operator, connecting while the flood goes on, is answered. The
	// flood opens a connection every millisecond, so that a connection
	// lives about a quarter of a second before it is closed to make room:
	// far more than an operator's request needs to arrive, even on a busy
	// machine. A flood faster than any request can arrive would close the
	// operator's connection too, as it would any other; no cap helps there.
	const floodEvery = time.Millisecond
	ctx, stop := context.WithCancel(context.Background())
	flood := make(chan error, 1)
	var floodConns []net.Conn
	var opened atomic.Int64
	go func() {
		defer close(flood)
		start := time.Now()
		for i := 0; ctx.Err() == nil && i < 3000; i++ {
			time.Sleep(time.Until(start.Add(time.Duration(i) * floodEvery)))
			c, err := slowConn(fmt.Sprintf("127.0.%d.%d", 1+i/250, 1+i%250), addr)
			if err != nil {
				flood <- err
				return
			}
			floodConns = append(floodConns, c)
			opened.Add(1)
		}
	}()
	defer func() {
		for _, c := range floodConns {
			c.Close()
		}
	}()
	for opened.Load() < int64(2*defaultLimits.MaxConns) {
		select {
		case err := <-flood:
			t.Fatalf("flood ended after %d connections: %v", opened.Load(), err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	op := operatorClient("127.0.0.2")
	for i := range 10 {
		for _, path := range []string{"/healthz", "/"} {
			resp, err := op.Get("http://" + addr + path)
			if err != nil {
				t.Fatalf("operator's request %d for %s during the flood: %v", i, path, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("operator's request %d for %s = %d %s", i, path, resp.StatusCode, body)
			}
		}
	}
	during := opened.Load() < 3000
	stop()
	if err := <-flood; err != nil {
		t.Fatalf("flood: %v", err)
	}
	g.conns.mu.Lock()
	open := len(g.conns.conns)
	g.conns.mu.Unlock()
	if open > defaultLimits.MaxConns {
		t.Errorf("%d connections open, more than the cap %d", open, defaultLimits.MaxConns)
	}
	if g.conns.evicted.Load() == 0 {
		t.Errorf("%d flood connections and none made room: the test did not fill the server", len(floodConns))
	}
	grown := int64(heapAndStacks()) - int64(before)
	t.Logf("%d + %d slow connections: %d refused, %d closed to make room, %d open, heap and stacks grew %d KiB; operator answered while the flood went on: %v",
		fromOne, len(floodConns), g.conns.refused.Load(), g.conns.evicted.Load(), open, grown>>10, during)
	if grown > 32<<20 {
		t.Errorf("memory grew by %d MiB with the connections held", grown>>20)
	}
}

// A connection that has sent its whole request is being served and is
// never closed to make room.
func TestConnLimiterSparesServing(t *testing.T) {
	c := newConnLimiter(Limits{MaxConns: 2, MaxConnsPerClient: 2})
	mk := func(client string) *limitedConn {
		return &limitedConn{Conn: nopConn{}, c: c, client: client, opened: time.Now()}
	}
	a1, a2 := mk("a"), mk("a")
	for _, lc := range []*limitedConn{a1, a2} {
		if err := c.admit(lc); err != nil {
			t.Fatal(err)
		}
	}
	a1.serving.Add(1)
	a2.serving.Add(1)
	if err := c.admit(mk("b")); err == nil || !strings.Contains(err.Error(), "all being served") {
		t.Fatalf("admit with every connection serving = %v, want refused", err)
	}
	a2.serving.Add(-1)
	b := mk("b")
	if err := c.admit(b); err != nil {
		t.Fatalf("admit with one waiting connection = %v", err)
	}
	if _, ok := c.conns[a2]; ok {
		t.Error("the waiting connection was not the one closed")
	}
	if _, ok := c.conns[a1]; !ok {
		t.Error("a connection being served was closed")
	}
	b.Close()
	b.Close()
	if len(c.conns) != 1 || c.byClient["b"] != 0 {
		t.Errorf("after closing twice: %d open, b holds %d", len(c.conns), c.byClient["b"])
	}
}

type nopConn struct{ net.Conn }

func (nopConn) Close() error { return nil }

// Requests that break the limits are refused with a status that says
// which, and the server goes on serving.
func TestOversizedAndMalformedRequests(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	addr := serveLoopback(t, f)
	raw := func(req string) string {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, req)
		line, _ := bufio.NewReader(c).ReadString('\n')
		return strings.TrimSpace(line)
	}
	for _, tc := range []struct{ name, req, want string }{
		{"header over the limit", "GET / HTTP/1.1\r\nHost: appliance.test\r\nX-Big: " + strings.Repeat("a", 2*defaultLimits.MaxHeaderBytes+4096) + "\r\n\r\n", "HTTP/1.1 431"},
		{"garbage", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http\r\n\r\n", "HTTP/1.1 400"},
		{"wrong host", "GET /api/v1/status HTTP/1.1\r\nHost: evil.example\r\n\r\n", "HTTP/1.1 421"},
		{"body over the limit", fmt.Sprintf("POST /api/v1/control/reboot HTTP/1.1\r\nHost: appliance.test\r\nAuthorization: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"reason\":\"%s\"}",
			goodAuth, reply.MaxBodyBytes+100, strings.Repeat("x", reply.MaxBodyBytes+86)), "HTTP/1.1 413"},
	} {
		if got := raw(tc.req); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: answered %q, want %s", tc.name, got, tc.want)
		}
		if got := raw("GET /healthz HTTP/1.1\r\nHost: appliance.test\r\n\r\n"); got != "HTTP/1.1 200 OK" {
			t.Fatalf("after %s: /healthz answered %q", tc.name, got)
		}
	}
}
