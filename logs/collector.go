package logs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/ipc"
)

// Bounds of the Collector's memory: DefaultLines lines of at most
// ipc.MaxLogText bytes for each of at most MaxDaemons daemons.
const (
	defaultLines = 200
	maxDaemons   = 32
)

// Collector keeps the recent lines of every daemon, in RAM only, and
// passes each line on to Forward (remote syslog) as it arrives.
type Collector struct {
	Lines   int               // per daemon; 0: DefaultLines
	Forward func(ipc.LogLine) // optional; must not block

	mu      sync.Mutex
	daemons map[string]*ring

	received  atomic.Uint64
	malformed atomic.Uint64 // datagrams that were not a LogLine
	refused   atomic.Uint64 // lines of daemons beyond MaxDaemons
}

type ring struct {
	lines  []ipc.LogLine
	next   int // where the next line goes once the ring is full
	pid    int
	total  uint64
	missed uint64
	last   time.Time
}

// Add keeps l and forwards it.
func (c *Collector) Add(l ipc.LogLine) error {
	if err := l.Check(); err != nil {
		c.malformed.Add(1)
		return err
	}
	c.mu.Lock()
	if c.daemons == nil {
		c.daemons = map[string]*ring{}
	}
	r := c.daemons[l.Daemon]
	if r == nil {
		if len(c.daemons) >= maxDaemons {
			c.mu.Unlock()
			c.refused.Add(1)
			return fmt.Errorf("line of %s: already %d daemons logging", l.Daemon, maxDaemons)
		}
		r = &ring{}
		c.daemons[l.Daemon] = r
	}
	size := c.Lines
	if size <= 0 {
		size = defaultLines
	}
	if len(r.lines) < size {
		r.lines = append(r.lines, l)
	} else {
		r.lines[r.next] = l
		r.next = (r.next + 1) % size
	}
	r.pid, r.last = l.PID, l.Time
	r.total++
	r.missed += l.Missed
	c.mu.Unlock()
	c.received.Add(1)
	if c.Forward != nil {
		c.Forward(l)
	}
	return nil
}

// Daemons reports every daemon that has logged, by name, with its last n
// lines (all that are kept for n < 0).
func (c *Collector) Daemons(n int) []ipc.DaemonLog {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]ipc.DaemonLog, 0, len(c.daemons))
	for name, r := range c.daemons {
		out = append(out, ipc.DaemonLog{Daemon: name, PID: r.pid, Total: r.total, Missed: r.missed, Last: r.last, Lines: r.tail(n)})
	}
	slices.SortFunc(out, func(a, b ipc.DaemonLog) int { return strings.Compare(a.Daemon, b.Daemon) })
	return out
}

// tail copies the last n lines (all for n < 0), oldest first; /metrics
// asks for none on every scrape.
func (r *ring) tail(n int) []ipc.LogLine {
	if n < 0 || n > len(r.lines) {
		n = len(r.lines)
	}
	out := make([]ipc.LogLine, 0, n)
	// The ring in order is lines[next:] then lines[:next].
	for i := len(r.lines) - n; i < len(r.lines); i++ {
		out = append(out, r.lines[(r.next+i)%len(r.lines)])
	}
	return out
}

// Stats reports lines received, datagrams that were not lines, and lines
// refused because too many daemons log.
func (c *Collector) Stats() (received, malformed, refused uint64) {
	return c.received.Load(), c.malformed.Load(), c.refused.Load()
}

// Serve receives lines on the datagram socket at path until ctx is done.
func (c *Collector) Serve(ctx context.Context, path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("logs: removing stale socket: %w", err)
	}
	pc, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("logs: %w", err)
	}
	// Bytes for a burst of lines while statusd is busy elsewhere (how
	// many datagrams may wait is net.unix.max_dgram_qlen, which init
	// raises).
	pc.SetReadBuffer(1 << 20)
	go func() {
		<-ctx.Done()
		pc.Close()
	}()
	buf := make([]byte, 2*ipc.MaxLogText+512)
	for {
		n, _, err := pc.ReadFromUnix(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("logs: reading %s: %w", path, err)
		}
		var l ipc.LogLine
		if err := json.Unmarshal(buf[:n], &l); err != nil {
			c.malformed.Add(1)
			continue
		}
		c.Add(l)
	}
}

// ToSyslog forwards each line to s as an RFC 5424 message of the daemon
// (APP-NAME) and its process (PROCID), MSGID "log", at info level: the
// standard logger has no levels, and no decision reads the words.
func ToSyslog(s *events.Sender, hostname string) func(ipc.LogLine) {
	return func(l ipc.LogLine) {
		s.SendAs(events.Event{Time: l.Time, Severity: events.Info, Kind: events.MsgIDLog, Message: l.Text},
			events.Header{Hostname: hostname, AppName: l.Daemon, ProcID: strconv.Itoa(l.PID)})
	}
}
