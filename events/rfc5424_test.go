package events

import (
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 1, 250000000, time.UTC)
	h := Header{Hostname: "ncpos-lab", AppName: "ncpos", ProcID: "42"}
	for _, tc := range []struct {
		name string
		e    Event
		h    Header
		want string
	}{
		{"bypass with fields", Event{Time: at, Severity: Warning, Kind: KindBypass, Message: "segment seg1 in bypass: forwarder unhealthy",
			Fields: map[string]string{"segment": "seg1", "state": "bypass"}}, h,
			`<28>1 2026-11-30T12:00:01.250000Z ncpos-lab ncpos 42 bypass [ncpos@32473 segment="seg1" state="bypass"] segment seg1 in bypass: forwarder unhealthy`},
		{"no fields, critical", Event{Time: at, Severity: Critical, Kind: KindWatchdog, Message: "reset by the watchdog"}, h,
			`<26>1 2026-11-30T12:00:01.250000Z ncpos-lab ncpos 42 watchdog - reset by the watchdog`},
		{"escapes and nil header", Event{Time: at, Severity: Info, Kind: "control", Message: "x",
			Fields: map[string]string{"reason": `say "hi" \ [ok]`, "bad=name": "v"}}, Header{Hostname: "has space", AppName: ""},
			`<30>1 2026-11-30T12:00:01.250000Z hasspace - - control [ncpos@32473 badname="v" reason="say \"hi\" \\ [ok\]"] x`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(Format(tc.e, tc.h)); got != tc.want {
				t.Fatalf("Format =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
