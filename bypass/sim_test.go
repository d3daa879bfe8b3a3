package bypass

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/internal/testenv"
	"github.com/ncpos/ncpos/lab"
)

// needRoot skips a test that needs root (BPF, namespaces) unless
// NCPOS_REQUIRE_LAB=1, where it fails instead.
func needRoot(t *testing.T) {
	t.Helper()
	testenv.NeedRoot(t, testenv.Lab, "the simulated relay (BPF, namespaces)")
}

// inNetns runs fn on a locked thread inside a fresh network namespace
// named ncpt-<pid>-sim with a veth pair (its two ends are the pair's ports), and deletes it all
// afterwards, whatever happened.
func inNetns(t *testing.T, fn func(ifA, ifB string)) {
	t.Helper()
	needRoot(t)
	name := fmt.Sprintf("ncpt-%d-sim", os.Getpid()%100000)
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		orig, err := netns.Get()
		if err != nil {
			t.Error(err)
			return
		}
		defer orig.Close()
		var ns netns.NsHandle
		err = lab.InNetnsDir(func() (err error) {
			ns, err = netns.NewNamed(name)
			return err
		})
		if err != nil {
			t.Error(err)
			return
		}
		defer func() {
			ns.Close()
			netns.Set(orig)
			if err := netns.DeleteNamed(name); err != nil {
				t.Errorf("deleting %s: %v", name, err)
			}
			lab.ReleaseNetnsDir()
		}()
		ifs := []string{"ncpt-sa", "ncpt-sb"}
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: ifs[0]}, PeerName: ifs[1]}); err != nil {
			t.Error(err)
			return
		}
		for _, n := range ifs {
			l, err := netlink.LinkByName(n)
			if err == nil {
				err = netlink.LinkSetUp(l)
			}
			if err != nil {
				t.Error(err)
				return
			}
		}
		fn(ifs[0], ifs[1])
	}()
	<-done
}

// runRelay runs the relay program on one frame arriving at ifindex and
// returns its verdict.
func runRelay(t *testing.T, s *Sim, ifindex int) uint32 {
	t.Helper()
	ctx := make([]byte, 48)
	binary.NativeEndian.PutUint32(ctx[40:], uint32(ifindex))
	ret, err := s.prog.Run(&ebpf.RunOptions{Data: make([]byte, 64), Context: ctx})
	if err != nil {
		t.Fatalf("running the relay program: %v", err)
	}
	return ret
}

func TestSim(t *testing.T) {
	inNetns(t, func(ifA, ifB string) {
		s, err := openSim("pair1", ifA, ifB, 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if s.Adopted {
			t.Error("fresh relay reported as adopted")
		}
		// Powered up: bypass.
		if st, err := s.Get(); st != bypassapi.Bypass || err != nil {
			t.Fatalf("new relay %s, %v; want bypass", st, err)
		}
		for _, tc := range []struct {
			st   bypassapi.State
			want uint32
		}{{bypassapi.Bypass, tcActRedirect}, {bypassapi.Normal, tcActOK}, {bypassapi.Disconnect, tcActShot}} {
			if err := s.Set(tc.st); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.Get(); got != tc.st {
				t.Errorf("read back %s, want %s", got, tc.st)
			}
			for _, idx := range s.idx {
				if got := runRelay(t, s, idx); got != tc.want {
					t.Errorf("%s: frame on ifindex %d gets verdict %d, want %d", tc.st, idx, got, tc.want)
				}
			}
		}

		// The instrumentation: the first frame carried since the last set,
		// and a count.
		s.Set(bypassapi.Bypass)
		t0 := monotonic()
		runRelay(t, s, s.idx[0])
		runRelay(t, s, s.idx[1])
		if st, err := s.Stats(); err != nil || st.FirstCarried < t0 || st.FirstCarried > monotonic() || st.Carried < 2 {
			t.Errorf("stats %+v (%v), want the first frame after %d", st, err, t0)
		}
		s.Set(bypassapi.Bypass)
		if st, _ := s.Stats(); st.FirstCarried != 0 {
			t.Errorf("set did not clear the first-carried time: %+v", st)
		}

		// Both ports carry the relay's filter.
		for _, name := range s.Ifs {
			l, _ := netlink.LinkByName(name)
			if _, err := ourFilter(l, s.Name); err != nil {
				t.Errorf("no relay filter on %s: %v", name, err)
			}
		}

		// The controller timer: kicked it holds, not kicked the relay
		// falls to bypass by itself — decided by the program per frame.
		if err := s.Set(bypassapi.Normal); err != nil {
			t.Fatal(err)
		}
		if d, err := s.Arm(120 * time.Millisecond); d != 150*time.Millisecond || err != nil {
			t.Fatalf("Arm = %v, %v; want 150ms (3 units of 50ms)", d, err)
		}
		for i := 0; i < 4; i++ {
			time.Sleep(60 * time.Millisecond)
			if err := s.Kick(); err != nil {
				t.Fatal(err)
			}
		}
		if got := runRelay(t, s, s.idx[0]); got != tcActOK {
			t.Fatalf("kicked relay gives verdict %d, want pass", got)
		}
		time.Sleep(200 * time.Millisecond)
		if got := runRelay(t, s, s.idx[0]); got != tcActRedirect {
			t.Errorf("unkicked relay gives verdict %d, want redirect (bypass)", got)
		}
		if r, _ := s.load(); r.Expired != 1 || r.Mode != simMode(bypassapi.Bypass) || r.Armed != 0 {
			t.Errorf("the program did not latch the expiry: %+v", r)
		}
		if err := s.Kick(); !errors.Is(err, errTimerExpired) {
			t.Errorf("kick after expiry: %v", err)
		}
		if exp, _ := s.TimerExpired(); !exp {
			t.Error("TimerExpired = false")
		}

		// An expiry nobody's frame noticed is latched by the reader.
		s.Set(bypassapi.Normal)
		s.SetDefault(bypassapi.TimerExpiry, bypassapi.Disconnect)
		s.Arm(50 * time.Millisecond)
		time.Sleep(80 * time.Millisecond)
		if st, _ := s.Get(); st != bypassapi.Disconnect {
			t.Errorf("after expiry to disconnect: %s", st)
		}

		// bypassd restarts: the relay and its state are adopted.
		s.Set(bypassapi.Normal)
		s2, err := openSim("pair1", ifA, ifB, 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if !s2.Adopted {
			t.Error("existing relay not adopted")
		}
		if st, _ := s2.Get(); st != bypassapi.Normal {
			t.Errorf("adopted relay %s, want normal", st)
		}
		s2.Close()
		if err := removeSim("pair1", ifA, ifB); err != nil {
			t.Error(err)
		}
		l, _ := netlink.LinkByName(ifA)
		if _, err := ourFilter(l, s.Name); err == nil {
			t.Error("RemoveSim left the filter")
		}
		qs, _ := netlink.QdiscList(l)
		for _, q := range qs {
			if q.Type() == "clsact" {
				t.Error("RemoveSim left the clsact qdisc")
			}
		}
	})
}
