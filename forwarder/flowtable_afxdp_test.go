package forwarder

import (
	"testing"
	"time"
)

func TestGoFlowTableLRU(t *testing.T) {
	tbl := newGoFlowTable(4, 1, time.Minute)
	s := tbl.shards[0]
	key := func(p uint16) FlowKey { return FlowKey{Family: 4, Proto: 17, SrcPort: p} }
	steps := []struct {
		port             uint16
		wantFlows        int
		wantCreated      uint64
		wantEvicted      uint64
		wantPresent      []uint16
		wantAbsent       []uint16
		wantPacketsOfKey uint64
	}{
		{port: 1, wantFlows: 1, wantCreated: 1, wantPresent: []uint16{1}, wantPacketsOfKey: 1},
		{port: 2, wantFlows: 2, wantCreated: 2, wantPacketsOfKey: 1},
		{port: 1, wantFlows: 2, wantCreated: 2, wantPacketsOfKey: 2}, // 1 is now most recent
		{port: 3, wantFlows: 3, wantCreated: 3, wantPacketsOfKey: 1},
		{port: 4, wantFlows: 4, wantCreated: 4, wantPacketsOfKey: 1},
		{port: 5, wantFlows: 4, wantCreated: 5, wantEvicted: 1, wantPresent: []uint16{1, 3, 4, 5}, wantAbsent: []uint16{2}, wantPacketsOfKey: 1},
		{port: 6, wantFlows: 4, wantCreated: 6, wantEvicted: 2, wantPresent: []uint16{3, 4, 5, 6}, wantAbsent: []uint16{1}, wantPacketsOfKey: 1},
	}
	for i, st := range steps {
		s.track(key(st.port), 64, 0, time.Duration(i)*time.Second)
		if len(s.index) != st.wantFlows || s.created != st.wantCreated || s.evicted != st.wantEvicted {
			t.Fatalf("step %d: flows %d created %d evicted %d, want %d %d %d", i,
				len(s.index), s.created, s.evicted, st.wantFlows, st.wantCreated, st.wantEvicted)
		}
		for _, p := range st.wantPresent {
			if _, ok := s.index[key(p)]; !ok {
				t.Errorf("step %d: flow %d missing", i, p)
			}
		}
		for _, p := range st.wantAbsent {
			if _, ok := s.index[key(p)]; ok {
				t.Errorf("step %d: flow %d should have been evicted", i, p)
			}
		}
		if got := s.slots[s.index[key(st.port)]].packets; got != st.wantPacketsOfKey {
			t.Errorf("step %d: %d packets, want %d", i, got, st.wantPacketsOfKey)
		}
	}
}

func TestGoFlowTableExpiry(t *testing.T) {
	tbl := newGoFlowTable(8, 1, time.Second)
	s := tbl.shards[0]
	now := tbl.now()
	s.track(FlowKey{Family: 4, SrcPort: 1}, 1, 0, now-10*time.Second) // idle long ago
	s.track(FlowKey{Family: 4, SrcPort: 2}, 1, 0x02, now)
	s.track(FlowKey{Family: 4, SrcPort: 2}, 1, 0x10, now)
	if err := tbl.Sweep(); err != nil {
		t.Fatal(err)
	}
	st := tbl.Stats()
	if st.Flows != 1 || st.Expired != 1 || st.Created != 2 {
		t.Errorf("after sweep: %+v, want 1 flow, 1 expired, 2 created", st)
	}
	if len(st.Top) != 1 || st.Top[0].TCPFlags != 0x12 || st.Top[0].Packets != 2 {
		t.Errorf("top = %+v, want the live flow with flags 0x12 and 2 packets", st.Top)
	}
	// Freed slots are reused without evicting.
	for p := uint16(10); p < 17; p++ {
		s.track(FlowKey{Family: 4, SrcPort: p}, 1, 0, now)
	}
	if s.evicted != 0 || len(s.index) != 8 {
		t.Errorf("evicted %d with %d flows, want 0 and 8", s.evicted, len(s.index))
	}
}
