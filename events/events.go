// Package events is the appliance's short memory of what happened: bypass
// transitions, watchdog resets, link changes, rejected configurations,
// self-test results and control actions. statusd keeps the latest events in
// RAM for the dashboard (the flash card must not wear out on logs) and hands
// each one to remote syslog when the configuration names a target, because
// that is where network engineers look first.
package events

import (
	"fmt"
	"log"
	"sync"
	"time"
)

// Severity is the syslog severity of RFC 5424 §6.2.1 (0 = emergency …
// 7 = debug), so that an event keeps its meaning on the wire.
type Severity int

// The severities ncpos uses.
const (
	Critical Severity = 2
	Error    Severity = 3
	Warning  Severity = 4
	Notice   Severity = 5
	Info     Severity = 6
)

var severityNames = map[Severity]string{
	0: "emergency", 1: "alert", Critical: "critical", Error: "error",
	Warning: "warning", Notice: "notice", Info: "info", 7: "debug",
}

func (s Severity) String() string {
	if n, ok := severityNames[s]; ok {
		return n
	}
	return fmt.Sprintf("severity(%d)", int(s))
}

// MarshalText writes the name, so the JSON API says "warning", not 4.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a name written by MarshalText.
func (s *Severity) UnmarshalText(b []byte) error {
	for k, v := range severityNames {
		if v == string(b) {
			*s = k
			return nil
		}
	}
	return fmt.Errorf("unknown severity %q", b)
}

// Kinds of events; they are the MSGID on the syslog wire.
const (
	KindBypass    = "bypass"
	KindWatchdog  = "watchdog"
	KindLink      = "link"
	KindConfig    = "config"
	KindSelfTest  = "selftest"
	KindDaemon    = "daemon"
	KindControl   = "control"
	KindBoot      = "boot"
	KindCondition = "condition"
	KindLogin     = "login" // failed logins to the management API
	KindAudit     = "audit" // a control action or a refused request: who, what, the result
	KindTime      = "time"  // the clock: first sync, sync lost, a step
	// MsgIDLog is the MSGID of a daemon's log line on the syslog wire
	// (not an event).
	MsgIDLog = "log"
)

// Event is one thing that happened.
type Event struct {
	Seq      uint64            `json:"seq"`
	Time     time.Time         `json:"time"`
	Severity Severity          `json:"severity"`
	Kind     string            `json:"kind"`
	Message  string            `json:"message"`
	Fields   map[string]string `json:"fields,omitempty"` // e.g. segment, port, state
}

// Sink receives every event after it was logged. It must not block: the
// syslog sender queues and drops rather than stall statusd.
type Sink interface {
	Send(Event)
}

// Log keeps the latest events in a ring.
type Log struct {
	mu    sync.Mutex
	ring  []Event
	next  int // index of the next write in ring once it is full
	seq   uint64
	sinks []Sink
	now   func() time.Time
}

// defaultSize is how many events a Log keeps when NewLog is given 0.
const defaultSize = 200

// NewLog returns a log that keeps the latest size events.
func NewLog(size int, sinks ...Sink) *Log {
	if size <= 0 {
		size = defaultSize
	}
	return &Log{ring: make([]Event, 0, size), sinks: sinks, now: time.Now}
}

// AddSink adds a receiver for events logged from now on.
func (l *Log) AddSink(s Sink) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sinks = append(l.sinks, s)
}

// Add logs e (stamping its time if zero and its sequence number) and passes
// it on to the sinks. It returns the logged event.
func (l *Log) Add(e Event) Event {
	l.mu.Lock()
	l.seq++
	e.Seq = l.seq
	if e.Time.IsZero() {
		e.Time = l.now()
	}
	e.Time = e.Time.UTC()
	if len(l.ring) < cap(l.ring) {
		l.ring = append(l.ring, e)
	} else {
		l.ring[l.next] = e
		l.next = (l.next + 1) % len(l.ring)
	}
	sinks := append([]Sink(nil), l.sinks...)
	l.mu.Unlock()
	for _, s := range sinks {
		s.Send(e)
	}
	return e
}

// Addf logs an event built from its parts; fields are key, value pairs.
func (l *Log) Addf(sev Severity, kind string, fields []string, format string, args ...any) Event {
	e := Event{Severity: sev, Kind: kind, Message: fmt.Sprintf(format, args...)}
	if len(fields) > 0 {
		e.Fields = map[string]string{}
		for i := 0; i+1 < len(fields); i += 2 {
			e.Fields[fields[i]] = fields[i+1]
		}
	}
	return l.Add(e)
}

// Note logs an event built from its parts, as Addf does, and writes a
// line of it to the process's log too (log.Printf); on a nil Log it only
// writes the line.
func (l *Log) Note(sev Severity, kind string, fields []string, msg string) {
	log.Printf("event: %s %s: %s", sev, kind, msg)
	if l != nil {
		l.Addf(sev, kind, fields, "%s", msg)
	}
}

// Recent returns up to n events, newest first (n <= 0: all kept).
func (l *Log) Recent(n int) []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	size := len(l.ring)
	if n <= 0 || n > size {
		n = size
	}
	out := make([]Event, 0, n)
	for i := 0; i < n; i++ {
		// newest is just before next (or at the end before the ring filled)
		idx := (l.next - 1 - i + 2*size) % size
		if len(l.ring) < cap(l.ring) {
			idx = size - 1 - i
		}
		out = append(out, l.ring[idx])
	}
	return out
}
