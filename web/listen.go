package web

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ServeOnInterface serves h on every address of the named interface only
// (the management port), never on a wildcard address, so nothing is served
// on the data ports. Addresses come and go with DHCP, so it looks again
// every poll interval and opens or closes listeners to match.
//
// With no interface (the management port was not found) it serves nothing
// on the network until ctx is done.
func ServeOnInterface(ctx context.Context, ifname string, port int, h http.Handler, poll time.Duration) error {
	lim := defaultLimits
	return serveOnInterface(ctx, ifname, newConnLimiter(lim).wrap, []endpoint{plainEndpoint(port, func() *http.Server { return lim.httpServer(h) })}, poll)
}

// Serve serves the dashboard and API like ServeOnInterface, with the
// server's limits on every listener together: over HTTPS on port when the
// server has a TLS identity, and then on httpPort (0: none) plain HTTP
// only to redirect to HTTPS, which that port speaks too (plainAndTLS).
func (s *Server) Serve(ctx context.Context, ifname string, port, httpPort int, poll time.Duration) error {
	h, g := s.Handler(), s.guard()
	if s.TLS == nil {
		return serveOnInterface(ctx, ifname, g.conns.wrap, []endpoint{plainEndpoint(port, func() *http.Server { return g.lim.httpServer(h) })}, poll)
	}
	eps := []endpoint{{port: port, tls: true, scheme: "https", start: func(ln net.Listener) server {
		hs := s.httpsServer(h)
		go func() { logServe(ln.Addr(), hs.ServeTLS(ln, "", "")) }()
		return hs
	}}}
	if httpPort != 0 {
		redirect := s.redirectHandler(port)
		eps = append(eps, endpoint{port: httpPort, scheme: "http and https", start: func(ln net.Listener) server {
			return serveSplit(ln, s.httpsServer(h), g.lim.httpServer(redirect), g.lim.ReadHeaderTimeout)
		}})
	}
	return serveOnInterface(ctx, ifname, g.conns.wrap, eps, poll)
}

// endpoint is one port served on every management address.
type endpoint struct {
	port   int
	tls    bool   // only TLS: a connection over the limit is closed without a word
	scheme string // for the log
	start  func(net.Listener) server
}

// server is what serves one endpoint on one address.
type server interface {
	Shutdown(context.Context) error
	Close() error
}

// plainEndpoint serves plain HTTP with a new server from newServer on
// each address.
func plainEndpoint(port int, newServer func() *http.Server) endpoint {
	return endpoint{port: port, scheme: "http", start: func(ln net.Listener) server {
		hs := newServer()
		go func() { logServe(ln.Addr(), hs.Serve(ln)) }()
		return hs
	}}
}

func logServe(addr net.Addr, err error) {
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Printf("statusd: %s: %v", addr, err)
	}
}

func serveOnInterface(ctx context.Context, ifname string, wrap func(net.Listener, bool) net.Listener, eps []endpoint, poll time.Duration) error {
	if ifname == "" {
		log.Printf("statusd: no management interface: serving nothing on the network")
		<-ctx.Done()
		return nil
	}
	servers := map[string]server{}
	defer func() {
		// Let answers in flight finish (a reboot request's 202 races
		// gokrazy's SIGTERM), but not for long.
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		for _, s := range servers {
			if s.Shutdown(sctx) != nil {
				s.Close()
			}
		}
	}()
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		want := map[string]endpoint{}
		addrs, err := interfaceAddrs(ifname)
		if err != nil {
			log.Printf("statusd: %v", err)
		}
		for _, a := range addrs {
			for _, ep := range eps {
				want[net.JoinHostPort(a, strconv.Itoa(ep.port))] = ep
			}
		}
		for addr, s := range servers {
			if _, ok := want[addr]; !ok {
				log.Printf("statusd: address %s gone, closing", addr)
				s.Close()
				delete(servers, addr)
			}
		}
		for addr, ep := range want {
			if servers[addr] != nil {
				continue
			}
			ln, err := listenOn(ctx, ifname, addr)
			if err != nil {
				log.Printf("statusd: %v", err)
				continue
			}
			servers[addr] = ep.start(wrap(ln, ep.tls))
			log.Printf("statusd: serving %s on %s", ep.scheme, addr)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// listenOn listens on addr with the socket bound to ifname
// (SO_BINDTODEVICE): the kernel takes connections to it only from packets
// that arrived on the management interface, not from a data port that a
// frame for the management address reached.
func listenOn(ctx context.Context, ifname, addr string) (net.Listener, error) {
	lc := net.ListenConfig{Control: BindToDevice(ifname)}
	return lc.Listen(ctx, "tcp", addr)
}

// BindToDevice is a net.ListenConfig Control that binds the socket to
// ifname (SO_BINDTODEVICE), for every listener on the management port.
func BindToDevice(ifname string) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.SOL_SOCKET, unix.SO_BINDTODEVICE, ifname)
		}); err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("binding to %s: %w", ifname, serr)
		}
		return nil
	}
}

// interfaceAddrs lists the IPs of ifname as listen hosts (IPv6 link-local
// with its zone).
func interfaceAddrs(ifname string) ([]string, error) {
	ni, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, err
	}
	addrs, err := ni.Addrs()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		host := ipn.IP.String()
		if ipn.IP.To4() == nil && ipn.IP.IsLinkLocalUnicast() {
			host += "%" + ifname
		}
		out = append(out, host)
	}
	return out, nil
}
