package chronytest

import (
	"testing"
	"time"

	"github.com/beevik/ntp"
)

// TestServes: chronyd answers an NTP client with the host's time.
func TestServes(t *testing.T) {
	s := Start(t)
	r, err := ntp.QueryWithOptions(s.Addr, ntp.QueryOptions{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(); err != nil || r.Stratum != 3 || r.ClockOffset > 50*time.Millisecond || r.ClockOffset < -50*time.Millisecond {
		t.Errorf("chronyd answered stratum %d, offset %v (%v); want stratum 3 (its local reference), within 50 ms", r.Stratum, r.ClockOffset, err)
	}
}
