// Package logs takes the daemons' log lines off the box without ever
// writing them to flash. Each daemon's standard logger goes through a
// Writer, which keeps the lines on standard error (gokrazy's ring buffer),
// puts them on the kernel log (the serial console) at a bounded rate, and
// hands them to statusd's Collector over a datagram socket without
// waiting. The Collector keeps a ring of recent lines per daemon for the
// dashboard and the API, and forwards every line to remote syslog when a
// target is configured.
package logs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/time/rate"

	"github.com/ncpos/ncpos/internal/kmsg"
	"github.com/ncpos/ncpos/ipc"
)

// ConsoleEnv names the kernel log device a daemon puts its lines on; init
// sets it for the daemons it starts, so that daemons run elsewhere (the
// lab, tests) leave the host's kernel log alone.
const ConsoleEnv = "NCPOS_CONSOLE_LOG"

// Console rate: a serial console at 115200 baud carries about 11 KiB/s,
// which a chatty daemon must not fill; lines beyond the rate are counted
// and the count is said on the console when lines pass again.
const (
	consoleRate  = 20 // lines per second
	consoleBurst = 200
)

// Options say where a Writer's lines go besides standard error.
type Options struct {
	Out     io.Writer // the daemon's own copy (standard error); nil: none
	Console io.Writer // the kernel log, one record per write; nil: none
	Socket  string    // the Collector's datagram socket; "": none
	// Local hands lines to a Collector in the same process (statusd's own
	// lines) instead of the socket.
	Local func(ipc.LogLine)
	Now   func() time.Time
}

// Writer is a daemon's log output (log.SetOutput). Writes are split into
// lines; a line without its newline waits for the rest, up to
// ipc.MaxLogText bytes.
type Writer struct {
	daemon string
	pid    int
	opts   Options
	rate   *rate.Limiter
	sock   *dgram

	mu         sync.Mutex
	partial    []byte
	missed     uint64 // lines lost to the collector since the last one it took
	suppressed uint64 // lines kept off the console since the last one shown
	stats      WriterStats
	// waiting are lines the collector did not take (it was not up yet,
	// as at boot, when statusd starts last, or its queue was full), sent
	// again in order; flushing says a retry is under way.
	waiting  []ipc.LogLine
	flushing bool
}

// WriterStats count a Writer's lines since it was made.
type WriterStats struct {
	Lines      uint64 // lines written
	Missed     uint64 // lost to the collector: more were waiting than MaxWaiting
	Suppressed uint64 // kept off the console by its rate
	Waiting    int    // not taken by the collector yet, to be sent again
}

// MaxWaiting bounds the lines a Writer keeps for a collector that is not
// up: a daemon's start, which an operator wants to read, and no more.
// RetryEvery is how often it tries to hand them over to a collector that
// is not there; one whose queue was full is tried again after RetryFull.
const (
	maxWaiting = 128
	retryEvery = 500 * time.Millisecond
	retryFull  = 5 * time.Millisecond
)

// New makes the log output of the named daemon.
func New(daemon string, opts Options) *Writer {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	w := &Writer{daemon: daemon, pid: os.Getpid(), opts: opts, rate: rate.NewLimiter(consoleRate, consoleBurst)}
	if opts.Socket != "" && opts.Local == nil {
		w.sock = newDgram(opts.Socket)
	}
	return w
}

// Setup makes the named daemon's standard logger write through a Writer:
// standard error with the time in front, the kernel log named by
// $NCPOS_CONSOLE_LOG, and the collector in the socket folder.
func Setup(daemon string) *Writer {
	opts := Options{Out: os.Stderr, Socket: ipc.LogSocketPath(ipc.Dir())}
	if dev := os.Getenv(ConsoleEnv); dev != "" {
		if f, err := os.OpenFile(dev, os.O_WRONLY|os.O_APPEND, 0); err == nil {
			opts.Console = f
		} else {
			fmt.Fprintf(os.Stderr, "%s: console log: %v\n", daemon, err)
		}
	}
	w := New(daemon, opts)
	// The Writer puts the time in front of the daemon's own copy; the
	// console and syslog have their own.
	log.SetFlags(log.Flags() &^ (log.Ldate | log.Ltime | log.Lmicroseconds))
	log.SetOutput(w)
	return w
}

// Write takes what the logger wrote: usually one whole line.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.opts.Now()
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			w.partial = append(w.partial, rest...)
			if len(w.partial) >= ipc.MaxLogText {
				w.line(now, w.partial)
				w.partial = w.partial[:0]
			}
			break
		}
		if len(w.partial) > 0 {
			w.line(now, append(w.partial, rest[:i]...))
			w.partial = w.partial[:0]
		} else {
			w.line(now, rest[:i])
		}
		rest = rest[i+1:]
	}
	return len(p), nil
}

// line sends one line everywhere (w.mu held).
func (w *Writer) line(now time.Time, b []byte) {
	if len(b) > ipc.MaxLogText {
		b = b[:ipc.MaxLogText]
	}
	text := string(bytes.TrimRight(b, "\r"))
	w.stats.Lines++
	if w.opts.Out != nil {
		fmt.Fprintf(w.opts.Out, "%s %s\n", now.Format("2006/01/02 15:04:05"), text)
	}
	if w.opts.Console != nil {
		w.console(now, text)
	}
	l := ipc.LogLine{Daemon: w.daemon, PID: w.pid, Time: now, Text: text}
	switch {
	case w.opts.Local != nil:
		w.opts.Local(l)
	case w.sock != nil:
		if len(w.waiting) == maxWaiting {
			w.waiting = w.waiting[1:]
			w.missed++
			w.stats.Missed++
		}
		w.waiting = append(w.waiting, l)
		w.flush()
	}
}

// flush sends the waiting lines in order until the collector takes no
// more, and has them tried again later if any are left (w.mu held).
func (w *Writer) flush() {
	retry := retryEvery
	for len(w.waiting) > 0 {
		l := w.waiting[0]
		l.Missed = w.missed
		if err := w.sock.send(l); err != nil {
			if errors.Is(err, unix.EAGAIN) {
				retry = retryFull // there, and reading
			}
			break
		}
		w.waiting, w.missed = w.waiting[1:], 0
	}
	if len(w.waiting) == 0 {
		w.waiting = nil
		return
	}
	if !w.flushing {
		w.flushing = true
		time.AfterFunc(retry, func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.flushing = false
			w.flush()
		})
	}
}

func (w *Writer) console(now time.Time, text string) {
	if !w.rate.AllowN(now, 1) {
		w.suppressed++
		w.stats.Suppressed++
		return
	}
	if w.suppressed > 0 {
		fmt.Fprintf(w.opts.Console, "<%d>%s: (%d lines not shown on the console)\n", kmsg.Info, w.daemon, w.suppressed)
		w.suppressed = 0
	}
	fmt.Fprintf(w.opts.Console, "<%d>%s: %s\n", kmsg.Info, w.daemon, text)
}

// Stats reports the Writer's counters.
func (w *Writer) Stats() WriterStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.stats
	s.Waiting = len(w.waiting)
	return s
}

// dgram sends datagrams to a unix socket without connecting, so that a
// collector that restarts is found again, and without waiting: a full or
// absent collector fails the send at once.
type dgram struct {
	fd   int
	addr *unix.SockaddrUnix
}

func newDgram(path string) *dgram {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return &dgram{fd: -1}
	}
	return &dgram{fd: fd, addr: &unix.SockaddrUnix{Name: path}}
}

func (d *dgram) send(l ipc.LogLine) error {
	if d.fd < 0 {
		return errors.New("no socket")
	}
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	return unix.Sendto(d.fd, b, unix.MSG_DONTWAIT, d.addr)
}
