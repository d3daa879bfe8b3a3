package vm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ncpos/ncpos/config"
)

// TestBootToForwarding boots the default image (SeaBIOS, IDE disk) with
// LAN1 and LAN2 cabled to the test, which sends a numbered frame into
// LAN1 every 10 ms from QEMU's start. It reports the time from QEMU's
// start to seg1 forwarding with its relay normal, and where that time
// went: the firmware, the loader, the kernel, init and the daemons, and
// the hold-down (the loader's lines by the host's clock, the rest by the
// kernel's time stamps on the serial console). Frames lost while the
// relay was in bypass are reported; from a second before its switch to
// normal on, none may be lost, and frames must come out in order.
func TestBootToForwarding(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	img := testImage(t, "default", config.DefaultTOML())
	cables, wires := newCables(t, 2)

	stream := newBootStream(cables[0], cables[1])
	defer stream.stop()
	var started time.Time
	var serial string
	v, _ := boot(t, img, false, func(o *Options) {
		o.Wires = wires
		serial = o.SerialLog
		started = time.Now()
		stream.reset()
		stream.watch(o.SerialLog)
	})
	waitForwardingNormally(t, v, 2*time.Minute, "seg1")
	time.Sleep(2 * time.Second)
	stream.stop()

	res, err := stream.result()
	if err != nil {
		t.Fatal(err)
	}
	if res.order != nil {
		t.Error(res.order)
	}
	b, err := os.ReadFile(serial)
	if err != nil {
		t.Fatal(err)
	}
	m := bootMilestones(b)
	if m.init == 0 || m.daemons == 0 || m.forwarderd == 0 || m.attached == 0 || m.normal == 0 {
		t.Fatalf("a milestone of the boot is missing on the serial console: %+v", m)
	}
	loader, loaded, kernel := stream.loaderAndKernel()
	if loader.IsZero() || loaded.IsZero() || kernel.IsZero() {
		t.Fatalf("the loader's lines or the kernel's are missing on the serial console")
	}
	since := func(at time.Time) time.Duration { return at.Sub(started).Round(10 * time.Millisecond) }
	t.Logf("QEMU start to seg1 forwarding, its relay normal: %v, %v", since(kernel.Add(m.normal)), v.Pace())
	t.Logf("  firmware to the loader's banner    %v", since(loader))
	t.Logf("  the loader reading the kernel file %v", loaded.Sub(loader).Round(10*time.Millisecond))
	t.Logf("  the kernel unpacking itself        %v", kernel.Sub(loaded).Round(10*time.Millisecond))
	t.Logf("  the kernel to init                 %v", m.init)
	t.Logf("  init to the daemons' first line    %v", m.daemons-m.init)
	t.Logf("  to forwarderd's first line         %v", m.forwarderd-m.daemons)
	t.Logf("  to seg1's ports attached           %v", m.attached-m.forwarderd)
	t.Logf("  to the relay normal (hold-down)    %v", m.normal-m.attached)
	t.Logf("first frame of the stream out of LAN2 (through the relay in bypass): %v after QEMU's start (%d sent before it); %d of the %d sent since came out",
		since(res.first), res.before, res.got, res.after)

	// In bypass the VM's relay is a program on the ports' ingress, which
	// a driver's reset as forwarderd attaches stops; a box's relay joins
	// the cables themselves. From the relay's switch to normal on, the
	// box forwards: a wire that carries every frame.
	normal := kernel.Add(m.normal)
	for _, l := range res.lost {
		what := fmt.Sprintf("%d frames sent %v to %v after QEMU's start did not come out of LAN2", l.n, since(l.first), since(l.last))
		switch {
		case l.last.Before(normal.Add(-time.Second)):
			t.Logf("%s: the relay in bypass, seg1's ports attached %v after QEMU's start", what, since(kernel.Add(m.attached)))
		case l.first.After(normal.Add(time.Second)):
			t.Errorf("%s: seg1 forwarding, the relay normal since %v", what, since(normal))
		default:
			t.Errorf("%s: lost at the relay's switch to normal (%v)", what, since(normal))
		}
	}
}

// bootStream sends numbered frames into one cable and records when the
// first comes out of the other; it also watches the serial console for
// the loader's lines, which carry no time stamp of their own.
type bootStream struct {
	in, out  cable
	done     chan struct{} // everything stops
	stopSend chan struct{} // the sender stops
	wg       sync.WaitGroup

	mu       sync.Mutex
	sentAt   []time.Time // by sequence number
	firstOut time.Time
	firstSeq uint64
	got      uint64
	next     uint64
	gaps     [][2]uint64 // frames that did not come out, first to last
	boot     int         // the boot attempt the console is watched for
	err      error
	loader   time.Time // the loader's banner seen
	loaded   time.Time // the loader's "Loading /vmlinuz-a... ok"
	kernel   time.Time // the kernel's clock at zero, on the host's
}

// bootFrameType is the EtherType of the stream's frames (IEEE 802's local
// experimental type).
const bootFrameType = 0x88b5

func newBootStream(in, out cable) *bootStream {
	s := &bootStream{in: in, out: out, done: make(chan struct{}), stopSend: make(chan struct{})}
	s.wg.Add(2)
	go s.send()
	go s.receive()
	return s
}

// reset starts the count again as QEMU starts.
func (s *bootStream) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sentAt, s.firstOut, s.got, s.next, s.gaps, s.err = nil, time.Time{}, 0, 0, nil, nil
	s.loader, s.loaded, s.kernel = time.Time{}, time.Time{}, time.Time{}
	s.boot++
}

func bootFrame(seq uint64) []byte {
	f := make([]byte, 60)
	copy(f, []byte{0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(f[12:], bootFrameType)
	copy(f[14:], "ncpos boot stream")
	binary.BigEndian.PutUint64(f[32:], seq)
	return f
}

func (s *bootStream) send() {
	defer s.wg.Done()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.stopSend:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		seq := uint64(len(s.sentAt))
		s.sentAt = append(s.sentAt, time.Now())
		s.mu.Unlock()
		s.in.send(bootFrame(seq))
	}
}

func (s *bootStream) receive() {
	defer s.wg.Done()
	buf := make([]byte, 2048)
	for {
		select {
		case <-s.done:
			return
		default:
		}
		s.out.conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		n, _, err := s.out.conn.ReadFromUDP(buf)
		if err != nil {
			continue
		}
		f := buf[:n]
		if n < 40 || binary.BigEndian.Uint16(f[12:]) != bootFrameType || !bytes.Equal(f[14:31], []byte("ncpos boot stream")) {
			continue // the box's own frames are counted by other tests
		}
		seq := binary.BigEndian.Uint64(f[32:])
		s.mu.Lock()
		switch {
		case seq >= uint64(len(s.sentAt)):
			// Not sent since the count started again: a frame of an
			// earlier boot's stream.
		case seq == s.next-1 && !s.firstOut.IsZero():
			if s.err == nil {
				s.err = fmt.Errorf("frame %d came out of LAN2 twice", seq)
			}
		case s.firstOut.IsZero():
			s.firstOut, s.firstSeq, s.next, s.got = time.Now(), seq, seq+1, 1
		case seq < s.next:
			if s.err == nil {
				s.err = fmt.Errorf("frame %d came out of LAN2 after frame %d", seq, s.next-1)
			}
		default:
			if seq > s.next {
				s.gaps = append(s.gaps, [2]uint64{s.next, seq - 1})
			}
			s.next, s.got = seq+1, s.got+1
		}
		s.mu.Unlock()
	}
}

// watch follows the serial console: when the loader's banner appears,
// and when the kernel's clock started, on the host's clock.
func (s *bootStream) watch(serial string) {
	s.mu.Lock()
	boot := s.boot
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		var off int64
		for {
			select {
			case <-s.done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			f, err := os.Open(serial)
			if err != nil {
				continue
			}
			f.Seek(off, 0)
			r := bufio.NewReader(f)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					break
				}
				off += int64(len(line))
				s.seen(boot, time.Now(), strings.TrimRight(line, "\r\n"))
			}
			f.Close()
		}
	}()
}

func (s *bootStream) seen(boot int, now time.Time, line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if boot != s.boot {
		return // the console of a boot started again since
	}
	if s.loader.IsZero() && strings.HasPrefix(line, "SYSLINUX") {
		s.loader = now
	}
	if s.loaded.IsZero() && strings.HasPrefix(line, "Loading /vmlinuz") && strings.HasSuffix(line, "ok") {
		s.loaded = now
	}
	if at, _, ok := stamp(line); ok {
		if k := now.Add(-at); s.kernel.IsZero() || k.Before(s.kernel) {
			s.kernel = k
		}
	}
}

func (s *bootStream) loaderAndKernel() (loader, loaded, kernel time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loader, s.loaded, s.kernel
}

// stop stops the stream, giving the frames in flight a second to arrive.
func (s *bootStream) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	close(s.stopSend)
	time.Sleep(time.Second)
	close(s.done)
	s.wg.Wait()
}

// streamResult is what came of the stream.
type streamResult struct {
	first      time.Time // the first frame out
	order      error     // the first frame out of order, or twice
	before     uint64    // frames sent before the first one out
	got, after uint64    // frames out, and sent, from the first one out
	lost       []lostRun // from the first one out
}

// A lostRun is a run of frames that did not come out, by when they were
// sent.
type lostRun struct {
	n           uint64
	first, last time.Time
}

// result is what came of the stream so far.
func (s *bootStream) result() (streamResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.firstOut.IsZero() {
		return streamResult{}, fmt.Errorf("none of the %d frames sent into LAN1 came out of LAN2", len(s.sentAt))
	}
	r := streamResult{first: s.firstOut, before: s.firstSeq, got: s.got, after: uint64(len(s.sentAt)) - s.firstSeq}
	gaps := s.gaps
	if end := uint64(len(s.sentAt)); s.next < end {
		gaps = append(slices.Clip(gaps), [2]uint64{s.next, end - 1})
	}
	for _, g := range gaps {
		r.lost = append(r.lost, lostRun{n: g[1] - g[0] + 1, first: s.sentAt[g[0]], last: s.sentAt[g[1]]})
	}
	r.order = s.err
	return r, nil
}

// milestones are points of a boot on the guest's clock (the kernel's
// time stamps on the serial console).
type milestones struct {
	init, daemons, forwarderd, attached, normal time.Duration
}

var (
	stampRE  = regexp.MustCompile(`^\[\s*(\d+\.\d+)\] (.*)$`)
	daemonRE = regexp.MustCompile(`^(watchdogd|statusd|bypassd|forwarderd): `)
)

// stamp splits a kernel log line into its time stamp and text.
func stamp(line string) (time.Duration, string, bool) {
	sm := stampRE.FindStringSubmatch(line)
	if sm == nil {
		return 0, "", false
	}
	sec, err := strconv.ParseFloat(sm[1], 64)
	if err != nil {
		return 0, "", false
	}
	return time.Duration(sec * float64(time.Second)).Round(time.Millisecond), sm[2], true
}

// bootMilestones reads the milestones of the first boot on a serial
// console.
func bootMilestones(b []byte) milestones {
	var m milestones
	for _, line := range strings.Split(string(b), "\n") {
		at, text, ok := stamp(strings.TrimRight(line, "\r"))
		if !ok {
			continue
		}
		set := func(d *time.Duration, ok bool) {
			if *d == 0 && ok {
				*d = at
			}
		}
		set(&m.init, strings.HasPrefix(text, "Run /gokrazy/init"))
		set(&m.daemons, m.init != 0 && daemonRE.MatchString(text))
		set(&m.forwarderd, strings.HasPrefix(text, "forwarderd: "))
		set(&m.attached, strings.HasPrefix(text, "forwarderd: forward mode"))
		set(&m.normal, strings.HasPrefix(text, "bypassd: bypass: pair1 transition bypass -> normal"))
	}
	return m
}

// TestBootMilestones reads the milestones from a console as the box
// writes it, without QEMU.
func TestBootMilestones(t *testing.T) {
	console := "SYSLINUX 6.04\r\nLoading /vmlinuz-a... ok\r\n" +
		"[    0.000000] Linux version 6.12\n" +
		"[    2.554726] Run /gokrazy/init as init process\n" +
		"2026/12/05 22:05:42 gokrazy.go:181: cmdline: ...\n" +
		"[    6.938752] watchdogd: i6300ESB timer: timeout 10s\n" +
		"[    8.040570] forwarderd: port LAN1 (eth1): rx-vlan-filter wanted off\n" +
		"[   11.752653] forwarderd: forward mode; forwarding cpus [1]\n" +
		"[   16.406625] bypassd: bypass: pair1 transition bypass -> normal: forwarder healthy for 5.057s\n" +
		"[   30.000000] bypassd: bypass: pair1 transition bypass -> normal: again\n"
	got := bootMilestones([]byte(console))
	want := milestones{init: 2555 * time.Millisecond, daemons: 6939 * time.Millisecond, forwarderd: 8041 * time.Millisecond,
		attached: 11753 * time.Millisecond, normal: 16407 * time.Millisecond}
	if got != want {
		t.Errorf("milestones %+v, want %+v", got, want)
	}
	s := &bootStream{boot: 1}
	now := time.Now()
	s.seen(1, now, "SYSLINUX 6.04")
	s.seen(1, now.Add(time.Second), "Loading /vmlinuz-a... ok")
	s.seen(1, now.Add(3*time.Second), "[    0.500000] Linux version 6.12")
	s.seen(1, now.Add(4*time.Second), "[    1.250000] pci 0000:00:10.0: BAR 0")
	loader, loaded, kernel := s.loaderAndKernel()
	if !loader.Equal(now) || !loaded.Equal(now.Add(time.Second)) || !kernel.Equal(now.Add(2500*time.Millisecond)) {
		t.Errorf("loader %v, loaded %v, kernel %v after the banner; want 0s, 1s, 2.5s", loader.Sub(now), loaded.Sub(now), kernel.Sub(now))
	}
}
