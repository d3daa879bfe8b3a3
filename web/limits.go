package web

import (
	"net/http"
	"time"
)

// Limits bound what one client, and all clients together, can take from
// statusd: a box is managed across networks we do not control, and a
// client that opens connections and never finishes them, or asks for the
// dashboard as fast as it can, must not starve the operator or the box.
type Limits struct {
	ReadHeaderTimeout time.Duration // to send the request line and headers
	ReadTimeout       time.Duration // to send the whole request
	WriteTimeout      time.Duration // to take the whole answer
	IdleTimeout       time.Duration // a kept-alive connection between requests
	MaxHeaderBytes    int           // request line and headers

	MaxConns          int // open connections in all
	MaxConnsPerClient int // open connections from one client (address, IPv6 /64)

	Rate       float64 // requests per second one client may keep up
	Burst      int     // requests one client may send at once
	MaxClients int     // clients whose rate is tracked at once

	// LoginFreeFailures wrong passwords from one client are answered at
	// once; each one after that makes the client wait LoginBackoff, doubled
	// per failure up to LoginMaxBackoff, before any login is tried again.
	LoginFreeFailures int
	LoginBackoff      time.Duration
	LoginMaxBackoff   time.Duration
	// LoginForget drops a client's failures after this long without one.
	LoginForget time.Duration
}

// defaultLimits are statusd's limits. A dashboard page load is a handful
// of requests and it then polls once a second, well inside Rate and Burst;
// 16 connections per client are more than a browser opens to one host.
var defaultLimits = Limits{
	ReadHeaderTimeout: 5 * time.Second,
	ReadTimeout:       30 * time.Second,
	WriteTimeout:      60 * time.Second,
	IdleTimeout:       30 * time.Second,
	MaxHeaderBytes:    8 << 10,

	MaxConns:          256,
	MaxConnsPerClient: 16,

	Rate:       20,
	Burst:      60,
	MaxClients: 4096,

	LoginFreeFailures: 3,
	LoginBackoff:      time.Second,
	LoginMaxBackoff:   5 * time.Minute,
	LoginForget:       15 * time.Minute,
}

// orDefault fills the fields left zero from DefaultLimits.
func (l Limits) orDefault() Limits {
	d := defaultLimits
	orDefault(&l.ReadHeaderTimeout, d.ReadHeaderTimeout)
	orDefault(&l.ReadTimeout, d.ReadTimeout)
	orDefault(&l.WriteTimeout, d.WriteTimeout)
	orDefault(&l.IdleTimeout, d.IdleTimeout)
	orDefault(&l.MaxHeaderBytes, d.MaxHeaderBytes)
	orDefault(&l.MaxConns, d.MaxConns)
	orDefault(&l.MaxConnsPerClient, d.MaxConnsPerClient)
	orDefault(&l.Rate, d.Rate)
	orDefault(&l.Burst, d.Burst)
	orDefault(&l.MaxClients, d.MaxClients)
	orDefault(&l.LoginFreeFailures, d.LoginFreeFailures)
	orDefault(&l.LoginBackoff, d.LoginBackoff)
	orDefault(&l.LoginMaxBackoff, d.LoginMaxBackoff)
	orDefault(&l.LoginForget, d.LoginForget)
	return l
}

func orDefault[T int | float64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// httpServer is an http.Server for h with the timeouts and header limit.
func (l Limits) httpServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           markServing(h),
		ConnContext:       connContext,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
}
