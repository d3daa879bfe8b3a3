package vm

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/internal/syslogtest"
	"github.com/ncpos/ncpos/ipc"
)

// checkDaemonLogs checks that the daemons' own log lines leave a booted
// box: at the syslog collector under each daemon's name and process, on
// the serial console, and in the API, the same lines in each.
func checkDaemonLogs(t *testing.T, v *VM, collector *syslogtest.Receiver, serial string) {
	t.Helper()
	hostname := system(t, v).Hostname
	names := []string{"bypassd", "statusd"}
	// A daemon init started last may not have logged yet when /healthz
	// first answers: wait for a line of each.
	byName := map[string]ipc.DaemonLog{}
	for deadline := time.Now().Add(v.Within(time.Minute)); ; time.Sleep(time.Second) {
		var api struct{ Daemons []ipc.DaemonLog }
		getAPI(t, v, "api/v1/logs?limit=200", &api)
		for _, d := range api.Daemons {
			byName[d.Daemon] = d
		}
		missing := ""
		for _, name := range names {
			if len(byName[name].Lines) == 0 {
				missing = name
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API has no lines of %s after a minute: %+v", missing, api.Daemons)
		}
	}
	console, err := os.ReadFile(serial)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		d := byName[name]
		first := d.Lines[0]
		// RFC 5424: <daemon(3)*8+info(6)>1 time host app procid msgid - text
		re := regexp.MustCompile(fmt.Sprintf(`^<30>1 \S+ %s %s %d log - %s$`, regexp.QuoteMeta(hostname), name, first.PID, regexp.QuoteMeta(first.Text)))
		for deadline := time.Now().Add(v.Within(time.Minute)); collector.Find(re) == ""; time.Sleep(time.Second) {
			if time.Now().After(deadline) {
				t.Fatalf("%s's line %q (pid %d) did not reach the %s collector; it has %d messages", name, first.Text, first.PID, collector.Scheme, len(collector.All()))
			}
		}
		if !strings.Contains(string(console), name+": "+first.Text) {
			t.Errorf("the serial console lacks %s's line %q", name, first.Text)
		}
		t.Logf("%s: %d lines (%d missed), first %q at the collector over %s and on the console", name, d.Total, d.Missed, first.Text, collector.Scheme)
	}
}
