package ipc

import (
	"fmt"
	"path/filepath"
	"regexp"
	"time"
)

// LogSocket is the datagram socket in the socket folder where statusd
// collects the daemons' log lines: one LogLine as JSON per datagram. A
// datagram is sent without waiting, so that a daemon never stalls on its
// log; what could not be sent is counted in the next line's Missed.
const LogSocket = "logs.sock"

// LogSocketPath is the collector's socket in dir.
func LogSocketPath(dir string) string { return filepath.Join(dir, LogSocket) }

// MaxLogText is the longest text of one line; a longer line is cut there.
const MaxLogText = 1024

// LogLine is one line a daemon logged.
type LogLine struct {
	Daemon string    `json:"daemon"`
	PID    int       `json:"pid"`
	Time   time.Time `json:"time"`
	Text   string    `json:"text"`
	// Missed counts the daemon's lines before this one that did not reach
	// the collector (it was not running or not reading).
	Missed uint64 `json:"missed,omitempty"`
}

// DaemonLog is what statusd holds of one daemon's log (GET /api/v1/logs).
type DaemonLog struct {
	Daemon string    `json:"daemon"`
	PID    int       `json:"pid"`
	Total  uint64    `json:"total"`  // lines received since statusd started
	Missed uint64    `json:"missed"` // lines the daemon could not hand over
	Last   time.Time `json:"last"`
	Lines  []LogLine `json:"lines"` // oldest first
}

var daemonName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

// Check says what is wrong with a line that came off the socket.
func (l LogLine) Check() error {
	if !daemonName.MatchString(l.Daemon) {
		return fmt.Errorf("daemon name %q: want 1 to 32 of a-z, 0-9 and -, starting with a letter", l.Daemon)
	}
	if len(l.Text) > MaxLogText {
		return fmt.Errorf("line of %s: %d bytes, more than %d", l.Daemon, len(l.Text), MaxLogText)
	}
	if l.Time.IsZero() {
		return fmt.Errorf("line of %s: no time", l.Daemon)
	}
	return nil
}
