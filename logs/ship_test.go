package logs

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/internal/syslogtest"
	"github.com/ncpos/ncpos/ipc"
)

// The test binary doubles as a daemon: with $NCPOS_LOGS_TEST_DAEMON set it
// logs $NCPOS_LOGS_TEST_LINES lines through Setup and exits, as
// forwarderd or bypassd would log.
func TestMain(m *testing.M) {
	if name := os.Getenv("NCPOS_LOGS_TEST_DAEMON"); name != "" {
		Setup(name)
		n, _ := strconv.Atoi(os.Getenv("NCPOS_LOGS_TEST_LINES"))
		for i := range n {
			log.Printf("line %d of %s", i, name)
			// A datagram socket's default queue is ten; the appliance
			// raises it, the test host keeps its own.
			time.Sleep(2 * time.Millisecond)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runDaemon runs the test binary as the named daemon with its sockets in
// runDir and its console in a file, and returns its pid and standard error.
func runDaemon(t *testing.T, name, runDir, console string, lines int) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "NCPOS_LOGS_TEST_DAEMON="+name, "NCPOS_LOGS_TEST_LINES="+strconv.Itoa(lines),
		"NCPOS_RUN_DIR="+runDir, ConsoleEnv+"="+console)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, stderr.String())
	}
	return cmd.Process.Pid, stderr.String()
}

// A daemon's lines reach the syslog collector over UDP, TCP and TLS as
// RFC 5424 messages under the daemon's name and process, and its console
// and standard error carry every one of them too.
func TestDaemonLinesReachSyslog(t *testing.T) {
	const lines = 30
	for _, scheme := range []string{"udp", "tcp", "tls"} {
		t.Run(scheme, func(t *testing.T) {
			r := syslogtest.Listen(t, scheme)
			s, err := events.NewSender(r.Target(), events.Header{Hostname: "ncpos-test", AppName: "ncpos"}, r.CA)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go s.Run(ctx)
			c := &Collector{Forward: ToSyslog(s, "ncpos-test")}
			dir := t.TempDir()
			served := make(chan error, 1)
			go func() { served <- c.Serve(ctx, ipc.LogSocketPath(dir)) }()
			waitFor(t, func() bool { _, err := os.Stat(ipc.LogSocketPath(dir)); return err == nil })

			console := filepath.Join(dir, "kmsg")
			os.WriteFile(console, nil, 0o644)
			pid, stderr := runDaemon(t, "forwarderd", dir, console, lines)

			re := regexp.MustCompile(fmt.Sprintf(`^<30>1 \S+ ncpos-test forwarderd %d log - line \d+ of forwarderd$`, pid))
			waitFor(t, func() bool { return r.Count(re) == lines })
			d := c.Daemons(0)
			if len(d) != 1 || d[0].Total != lines || d[0].Missed != 0 || d[0].PID != pid {
				t.Fatalf("collector holds %+v, want %d lines of pid %d", d, lines, pid)
			}
			kmsg, _ := os.ReadFile(console)
			if n := strings.Count(string(kmsg), "<6>forwarderd: line "); n != lines {
				t.Errorf("console has %d lines of forwarderd, want %d:\n%s", n, lines, kmsg)
			}
			if n := len(regexp.MustCompile(`(?m)^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d line \d+ of forwarderd$`).FindAllString(stderr, -1)); n != lines {
				t.Errorf("standard error has %d lines, want %d:\n%s", n, lines, stderr)
			}
			cancel()
			if err := <-served; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A syslog collector that is down loses only what overflows the queue,
// and that is counted: the rest arrives once it is back.
func TestSyslogOutageLosesOnlyOverflow(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // down
	s, err := events.NewSender("tcp://"+addr, events.Header{Hostname: "ncpos-test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	c := &Collector{Forward: ToSyslog(s, "ncpos-test")}
	const total = events.QueueSize + 300
	now := time.Now()
	for i := range total {
		c.Add(ipc.LogLine{Daemon: "bypassd", PID: 7, Time: now, Text: fmt.Sprintf("line %d", i)})
	}
	time.Sleep(500 * time.Millisecond)
	_, dropped := s.Stats()
	if dropped < 299 || dropped > 300 {
		// One message may be out of the queue, waiting for the dial.
		t.Fatalf("dropped %d of %d lines while the collector was down, want the 300 over the queue of %d", dropped, total, events.QueueSize)
	}

	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the collector's port was taken meanwhile: %v", err)
	}
	defer ln.Close()
	r := &syslogtest.Receiver{}
	go r.Serve(ln)
	all := regexp.MustCompile(`bypassd 7 log - line \d+$`)
	want := total - int(dropped)
	waitForLong(t, 40*time.Second, func() bool { return r.Count(all) == want })
	if sent, _ := s.Stats(); sent != uint64(want) {
		t.Fatalf("sender counts %d sent, want %d", sent, want)
	}
	if r.Count(regexp.MustCompile(`line 0$`)) != 1 {
		t.Fatal("the oldest line did not arrive: the queue dropped the wrong end")
	}
}

func waitForLong(t *testing.T, d time.Duration, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatal("timed out")
}
