package events

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

type collect []Event

func (c *collect) Send(e Event) { *c = append(*c, e) }

func TestLogRing(t *testing.T) {
	for _, tc := range []struct {
		size, add              int
		wantNewest, wantOldest uint64
		wantLen                int
	}{
		{size: 5, add: 3, wantNewest: 3, wantOldest: 1, wantLen: 3},
		{size: 5, add: 5, wantNewest: 5, wantOldest: 1, wantLen: 5},
		{size: 5, add: 12, wantNewest: 12, wantOldest: 8, wantLen: 5},
	} {
		t.Run(fmt.Sprintf("size%d-add%d", tc.size, tc.add), func(t *testing.T) {
			var sink collect
			l := NewLog(tc.size, &sink)
			for i := 0; i < tc.add; i++ {
				l.Addf(Info, KindLink, []string{"port", "LAN1"}, "event %d", i+1)
			}
			got := l.Recent(0)
			if len(got) != tc.wantLen || got[0].Seq != tc.wantNewest || got[len(got)-1].Seq != tc.wantOldest {
				t.Fatalf("Recent = %d events, newest %d oldest %d; want %d, %d, %d", len(got), got[0].Seq, got[len(got)-1].Seq, tc.wantLen, tc.wantNewest, tc.wantOldest)
			}
			for i := 1; i < len(got); i++ {
				if got[i].Seq != got[i-1].Seq-1 {
					t.Fatalf("Recent not newest first: %v", got)
				}
			}
			if len(sink) != tc.add || sink[0].Fields["port"] != "LAN1" {
				t.Fatalf("sink got %d events (%+v), want %d", len(sink), sink, tc.add)
			}
			if two := l.Recent(2); len(two) != min(2, tc.wantLen) || two[0].Seq != tc.wantNewest {
				t.Fatalf("Recent(2) = %+v", two)
			}
		})
	}
}

func TestSeverityJSON(t *testing.T) {
	e := Event{Seq: 1, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Severity: Warning, Kind: KindBypass, Message: "m"}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Severity != Warning || string(b) != `{"seq":1,"time":"2026-01-02T03:04:05Z","severity":"warning","kind":"bypass","message":"m"}` {
		t.Fatalf("JSON %s -> %+v", b, back)
	}
}
