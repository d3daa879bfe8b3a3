package web

import (
	"crypto/tls"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ncpos/ncpos/web/reply"
)

// httpsServer serves h over TLS with the box's identity. HTTP/2 is off:
// the connection caps and header limits are per connection, and one
// HTTP/1.1 connection carries one request at a time.
func (s *Server) httpsServer(h http.Handler) *http.Server {
	g := s.guard()
	hs := g.lim.httpServer(h)
	hs.TLSConfig = &tls.Config{Certificates: []tls.Certificate{s.TLS.Cert}, MinVersion: tls.VersionTLS12}
	hs.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	hs.ErrorLog = log.New(&g.tlsLog, "", 0)
	return hs
}

// redirectHandler is what plain HTTP serves, behind the same Host check
// and rate limit as the API.
func (s *Server) redirectHandler(httpsPort int) http.Handler {
	return s.guarded(redirectToHTTPS(httpsPort))
}

// redirectToHTTPS is all plain HTTP does: a browser that typed the box's
// address is sent to the same page over HTTPS. Nothing is served in the
// clear, and a request that would change something is refused rather
// than redirected, so that no client learns to send it in the clear.
//
// A client that named a port other than 80 is sent to that same port,
// which speaks HTTPS too (plainAndTLS): it may have reached the box
// through a port forward, whose outside port for the HTTPS port the box
// cannot know. Otherwise it goes to httpsPort.
func redirectToHTTPS(httpsPort int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, port := r.Host, httpsPort
		if h, p, err := net.SplitHostPort(host); err == nil {
			host = h
			if n, err := strconv.Atoi(p); err == nil && n > 0 && n <= 65535 && n != 80 {
				port = n
			}
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		if host == "" {
			reply.Error(w, http.StatusBadRequest, "this box serves only HTTPS: request https://<its address>/ with a Host header")
			return
		}
		if port != 443 {
			host += ":" + strconv.Itoa(port)
		}
		target := "https://" + host + r.URL.RequestURI()
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			reply.Error(w, http.StatusForbidden, "this box takes no requests over plain HTTP: send it to "+target)
			return
		}
		http.Redirect(w, r, target, http.StatusMovedPermanently)
	})
}

// handshakeLog takes the HTTPS servers' error log: failed handshakes
// (scanners, plain HTTP sent to the HTTPS port, broken clients) are
// counted and logged at most every 10 s, so a hostile neighbour cannot
// fill statusd's log.
type handshakeLog struct {
	failed atomic.Uint64
	mu     sync.Mutex
	last   time.Time
	quiet  uint64 // failures not logged since last
}

func (l *handshakeLog) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	if !strings.Contains(msg, "TLS handshake error") {
		log.Printf("statusd: %s", msg)
		return len(p), nil
	}
	l.failed.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Since(l.last) < 10*time.Second {
		l.quiet++
		return len(p), nil
	}
	if l.quiet > 0 {
		log.Printf("statusd: %s (and %d more failed handshakes)", msg, l.quiet)
	} else {
		log.Printf("statusd: %s", msg)
	}
	l.last, l.quiet = time.Now(), 0
	return len(p), nil
}
