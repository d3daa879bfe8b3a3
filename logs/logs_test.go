package logs

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/ipc"
)

// A line written by the standard logger reaches standard error with its
// time, the console with the daemon's name at info level, and the
// collector whole; a write in pieces makes one line.
func TestWriterSplitsAndFansOut(t *testing.T) {
	var out, console bytes.Buffer
	c := &Collector{}
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	w := New("forwarderd", Options{Out: &out, Console: &console, Local: func(l ipc.LogLine) { c.Add(l) }, Now: func() time.Time { return now }})
	l := log.New(w, "", 0)
	l.Printf("segment seg1: forwarding")
	w.Write([]byte("two\nlines\nand a "))
	w.Write([]byte("rest\n"))
	if got, want := out.String(), "2026/12/02 06:00:00 segment seg1: forwarding\n2026/12/02 06:00:00 two\n2026/12/02 06:00:00 lines\n2026/12/02 06:00:00 and a rest\n"; got != want {
		t.Errorf("standard error:\n%s\nwant\n%s", got, want)
	}
	if got, want := console.String(), "<6>forwarderd: segment seg1: forwarding\n<6>forwarderd: two\n<6>forwarderd: lines\n<6>forwarderd: and a rest\n"; got != want {
		t.Errorf("console:\n%s\nwant\n%s", got, want)
	}
	d := c.Daemons(-1)
	if len(d) != 1 || d[0].Daemon != "forwarderd" || d[0].Total != 4 || d[0].Lines[3].Text != "and a rest" || !d[0].Lines[0].Time.Equal(now) {
		t.Fatalf("collector holds %+v", d)
	}
}

// A daemon that logs faster than a serial console carries keeps its
// console to the rate and says how many lines it left off; the other
// copies get every line.
func TestConsoleRate(t *testing.T) {
	var console bytes.Buffer
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	c := &Collector{}
	w := New("statusd", Options{Console: &console, Local: func(l ipc.LogLine) { c.Add(l) }, Now: func() time.Time { return now }})
	for i := range consoleBurst + 50 {
		fmt.Fprintf(w, "line %d\n", i)
	}
	now = now.Add(time.Second)
	fmt.Fprintf(w, "after a second\n")
	lines := strings.Split(strings.TrimSpace(console.String()), "\n")
	if len(lines) != consoleBurst+2 {
		t.Fatalf("%d console lines, want %d (the burst, the count, the next line)", len(lines), consoleBurst+2)
	}
	if lines[consoleBurst] != "<6>statusd: (50 lines not shown on the console)" || lines[consoleBurst+1] != "<6>statusd: after a second" {
		t.Fatalf("console ends %q", lines[consoleBurst-1:])
	}
	if s := w.Stats(); s.Lines != consoleBurst+51 || s.Suppressed != 50 {
		t.Fatalf("stats %+v", s)
	}
	if d := c.Daemons(0); d[0].Total != consoleBurst+51 {
		t.Fatalf("collector got %d lines, want all %d", d[0].Total, consoleBurst+51)
	}
}

// Over the socket: lines sent while no collector runs are counted and
// the count arrives with the first line that gets through; the ring keeps
// the newest lines; a datagram that is not a line is counted and dropped.
func TestSocketAndRing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ipc.LogSocket)
	w := New("bypassd", Options{Socket: path})
	// A daemon that starts before statusd: its first lines wait for the
	// collector, and reach it once it is up, in order.
	fmt.Fprintln(w, "before the collector")
	fmt.Fprintln(w, "still before")
	if s := w.Stats(); s.Missed != 0 || s.Waiting != 2 {
		t.Fatalf("with no collector: %+v, want 2 lines waiting and none missed", s)
	}

	c := &Collector{Lines: 5}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Serve(ctx, path) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	waitFor(t, func() bool { d := c.Daemons(-1); return len(d) == 1 && len(d[0].Lines) == 2 })
	if d := c.Daemons(-1)[0]; d.Lines[0].Text != "before the collector" || d.Lines[1].Text != "still before" || d.Missed != 0 {
		t.Fatalf("the collector got %+v, want the two lines from before it ran", d)
	}

	for i := range 8 {
		fmt.Fprintf(w, "line %d\n", i)
		time.Sleep(time.Millisecond) // the default queue of a datagram socket is short
	}
	waitFor(t, func() bool { d := c.Daemons(-1); return len(d) == 1 && d[0].Lines[4].Text == "line 7" })
	d := c.Daemons(-1)[0]
	if len(d.Lines) != 5 || d.Lines[0].Text != "line 3" {
		t.Fatalf("ring holds %+v, want lines 3 to 7", d.Lines)
	}
	s := w.Stats()
	if d.Missed != 0 || s.Missed != 0 || d.Total != s.Lines || s.Waiting != 0 {
		t.Fatalf("collector: %d received, %d missed; writer: %+v; want every line", d.Total, d.Missed, s)
	}
	if got := c.Daemons(2)[0].Lines; len(got) != 2 || got[1].Text != "line 7" {
		t.Fatalf("last 2 lines: %+v", got)
	}

	for _, b := range [][]byte{[]byte("not json"), []byte(`{"daemon":"BAD NAME","time":"2026-12-02T06:00:00Z","text":"x"}`), []byte(`{"daemon":"ok","text":"no time"}`)} {
		sendRaw(t, path, b)
	}
	waitFor(t, func() bool { _, m, _ := c.Stats(); return m == 3 })
	if len(c.Daemons(0)) != 1 {
		t.Fatalf("bad datagrams made daemons: %+v", c.Daemons(0))
	}
}

// Memory stays bounded: a flood of daemon names stops at MaxDaemons.
func TestCollectorBounds(t *testing.T) {
	c := &Collector{Lines: 3}
	now := time.Now()
	for i := range maxDaemons + 10 {
		for j := range 10 {
			c.Add(ipc.LogLine{Daemon: fmt.Sprintf("d%d", i), Time: now, Text: fmt.Sprint(j)})
		}
	}
	d := c.Daemons(-1)
	if len(d) != maxDaemons {
		t.Fatalf("%d daemons kept, want %d", len(d), maxDaemons)
	}
	for _, x := range d {
		if len(x.Lines) != 3 || x.Lines[2].Text != "9" {
			t.Fatalf("%s holds %+v", x.Daemon, x.Lines)
		}
	}
	if _, _, refused := c.Stats(); refused != 100 {
		t.Fatalf("refused %d lines, want 100", refused)
	}
	if err := c.Add(ipc.LogLine{Daemon: "d1", Time: now, Text: strings.Repeat("x", ipc.MaxLogText+1)}); err == nil {
		t.Fatal("an oversized line was taken")
	}
}

func sendRaw(t *testing.T, path string, b []byte) {
	t.Helper()
	c, err := net.Dial("unixgram", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	waitForLong(t, 5*time.Second, ok)
}

// Past MaxWaiting lines with no collector, the oldest are lost and
// counted, and the collector is told how many on the first line it gets.
func TestWaitingBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), ipc.LogSocket)
	w := New("forwarderd", Options{Socket: path})
	for i := range maxWaiting + 10 {
		fmt.Fprintf(w, "line %d\n", i)
	}
	if s := w.Stats(); s.Missed != 10 || s.Waiting != maxWaiting {
		t.Fatalf("%+v, want 10 missed and %d waiting", s, maxWaiting)
	}
	c := &Collector{Lines: 2 * maxWaiting}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Serve(ctx, path) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	waitFor(t, func() bool { d := c.Daemons(-1); return len(d) == 1 && len(d[0].Lines) == maxWaiting })
	d := c.Daemons(-1)[0]
	if d.Missed != 10 || d.Lines[0].Text != "line 10" || d.Lines[0].Missed != 10 || d.Lines[1].Missed != 0 {
		t.Fatalf("collector: %d missed, first line %+v", d.Missed, d.Lines[0])
	}
}
