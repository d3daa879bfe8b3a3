// Package xsk binds AF_XDP sockets with asavie/xdp. The library takes the
// bind flags (zero-copy or copy) from a global, xdp.DefaultSocketFlags,
// so every bind in the process must hold the one lock this package keeps
// while it sets the global and binds.
package xsk

import (
	"sync"

	"github.com/asavie/xdp"
)

var mu sync.Mutex

// Bind binds a socket to queue of ifindex with the given bind flags
// (unix.XDP_ZEROCOPY, unix.XDP_COPY or 0 for the kernel's choice).
func Bind(ifindex, queue int, flags uint16, opts *xdp.SocketOptions) (*xdp.Socket, error) {
	mu.Lock()
	defer mu.Unlock()
	xdp.DefaultSocketFlags = flags
	defer func() { xdp.DefaultSocketFlags = 0 }()
	return xdp.NewSocket(ifindex, queue, opts)
}
