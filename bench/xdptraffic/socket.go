package xdptraffic

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asavie/xdp"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/internal/xsk"
)

// ErrNoLiveFrames is the error of a kernel that does not run XDP
// programs in BPF_PROG_RUN's live-frame mode: older than 5.18, or one
// that refuses it (EPERM), as the kernel of the machines ncpos's CI runs
// on does. The generator then sends from an AF_XDP socket
// (Generator.Engine).
var ErrNoLiveFrames = errors.New("this kernel does not run BPF_PROG_RUN's live frames")

var live struct {
	once sync.Once
	err  error
}

// LiveFrames tells whether this kernel runs XDP programs in live-frame
// mode, once per process: it runs a program that drops its one frame, so
// nothing is sent. The kernel's refusal wraps ErrNoLiveFrames; a program
// that does not load is an error of its own, and the generator then
// tries the socket too.
func LiveFrames() error {
	live.once.Do(func() { live.err = probeLiveFrames() })
	return live.err
}

func probeLiveFrames() error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "Dual BSD/GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 1 /* XDP_DROP */), asm.Return()}})
	if err != nil {
		return fmt.Errorf("trying BPF_PROG_RUN's live frames: loading a program: %w", err)
	}
	defer prog.Close()
	if _, err := prog.Run(&ebpf.RunOptions{Data: make([]byte, 64), Repeat: 1, Flags: liveFrames, BatchSize: 1}); err != nil {
		return fmt.Errorf("%w: %w", ErrNoLiveFrames, err)
	}
	return nil
}

// Engines of a generator, as Generator.Engine names them.
const (
	EngineLiveFrames = "kernel live frames"
	EngineSocket     = "AF_XDP socket"
)

// socketOptions size the socket's UMEM for sending only: frames go
// round between the TX ring and the completion ring.
var socketOptions = xdp.SocketOptions{
	NumFrames:              4096,
	FrameSize:              2048,
	FillRingNumDescs:       64,
	CompletionRingNumDescs: 4096,
	RxRingNumDescs:         64,
	TxRingNumDescs:         4096,
}

// socketSender sends a generator's frames from an AF_XDP socket in copy
// mode on the port's first queue, where the kernel will not run the
// program live: the same frames on the same schedule, from one thread,
// with a copy and a sendto per batch, so at a fraction of the program's
// rate.
type socketSender struct {
	xsk       *xdp.Socket
	ifindex   int
	flows     int
	sportBase uint16
	queued    atomic.Uint64 // frames handed to the kernel in the run under way
}

func newSocketSender(o GeneratorOptions, flows int) (*socketSender, error) {
	s := &socketSender{ifindex: o.Ifindex, flows: flows, sportBase: o.SportBase}
	if s.sportBase == 0 {
		s.sportBase = 1024 // as traffic.c's default
	}
	do := o.Do
	if do == nil {
		do = func(fn func() error) error { return fn() }
	}
	err := do(func() (err error) {
		s.xsk, err = xsk.Bind(o.Ifindex, 0, unix.XDP_COPY, &socketOptions)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("AF_XDP socket on ifindex %d: %w", o.Ifindex, err)
	}
	return s, nil
}

func (s *socketSender) close() error { return s.xsk.Close() }

// txBatch is what a copy-mode sendto sends at most (the kernel's
// TX_BATCH_SIZE): a batch goes out in one call, and a frame's time is
// read when it is handed over, not a ring's length before it goes.
const txBatch = 32

// run sends as the program does: frame n, stamped with n and (timed) the
// clock, due at start + n/rate; a lag up to the catch-up window caught up
// back to back, a longer one moving the schedule on. Frames counts what
// the kernel completed.
func (s *socketSender) run(ctx context.Context, snd Send, deadline time.Time, cpu int) (sent Sent, err error) {
	if len(snd.Frame) > socketOptions.FrameSize {
		return sent, fmt.Errorf("generator: a frame of %d bytes is longer than the AF_XDP socket's %d-byte frames", len(snd.Frame), socketOptions.FrameSize)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cpu >= 0 {
		var set, old unix.CPUSet
		if err := unix.SchedGetaffinity(0, &old); err != nil {
			return sent, fmt.Errorf("generator: %w", err)
		}
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return sent, fmt.Errorf("generator on CPU %d: %w", cpu, err)
		}
		defer unix.SchedSetaffinity(0, &old)
	}
	defer func() {
		// asavie's Transmit panics with an error on an unexpected
		// sendto error; anything else is a bug, and goes on.
		if r := recover(); r != nil {
			e, ok := r.(error)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("generator: AF_XDP socket on ifindex %d: %w", s.ifindex, e)
		}
	}()
	// Frames a run cut short left in flight are not this run's.
	if err := s.drain(ctx, 100*time.Millisecond, nil); err != nil {
		return sent, err
	}
	s.queued.Store(0)
	rate := snd.RatePPS // 0: flat out
	// A lag the program catches up: CatchUp, or 32 frames' time.
	keep := CatchUp
	if rate > 0 {
		keep = max(keep, time.Duration(32/rate*float64(time.Second)))
	}
	dueAt := func(k uint64) time.Duration { return time.Duration(float64(k) / rate * float64(time.Second)) }
	var start time.Duration
	for queued := uint64(0); queued < snd.Frames; {
		s.complete(&sent)
		if ctx.Err() != nil || time.Now().After(deadline) {
			break
		}
		now := Monotonic()
		if queued == 0 {
			start, sent.First = now, now
		}
		due := snd.Frames - queued
		if rate > 0 {
			since, next := now-start, dueAt(queued)
			if since < next {
				sent.Waits++
				// Sleep until the frame is due, at most 200 µs;
				// spin through the last 50 µs, which a sleep overshoots.
				if wait := next - since; wait > 50*time.Microsecond {
					sleep(min(wait-50*time.Microsecond, 200*time.Microsecond))
				}
				continue
			}
			lag := since - next
			sent.MaxLag = max(sent.MaxLag, lag)
			if lag > keep {
				shift := lag - keep
				start += shift
				sent.Slipped += shift
				sent.Slips++
				since -= shift
			}
			due = min(uint64(since.Seconds()*rate)+1, snd.Frames) - queued
			// A batch the schedule cuts short waits too: a sendto
			// can take longer than a frame's time, and then the
			// sender keeps the rate by sending fewer frames a call
			// rather than by waiting for the next one.
			if due < min(txBatch, uint64(s.xsk.NumFreeTxSlots()), snd.Frames-queued) {
				sent.Waits++
			}
		}
		descs := s.xsk.GetDescs(int(min(due, txBatch, uint64(s.xsk.NumFreeTxSlots()))))
		if len(descs) == 0 {
			if err := s.kick(); err != nil { // the ring is full: let the kernel send
				return sent, err
			}
			continue
		}
		for i := range descs {
			stamp := uint64(0)
			if snd.Timed {
				stamp = uint64(Monotonic())
			}
			f := s.xsk.GetFrame(descs[i])
			n := copy(f, snd.Frame)
			s.write(f[:n], queued+uint64(i), stamp)
			descs[i].Len = uint32(n)
		}
		sent.Last = now
		queued += uint64(s.xsk.Transmit(descs)) // and one sendto
		s.queued.Store(queued)
	}
	// What is queued goes out, unless the port has stopped taking frames.
	err = s.drain(ctx, 2*time.Second, &sent)
	return sent, err
}

// complete takes back the frames the kernel has sent, counting them in
// sent when it is not nil.
func (s *socketSender) complete(sent *Sent) {
	if n := s.xsk.NumCompleted(); n > 0 {
		s.xsk.Complete(n)
		if sent != nil {
			sent.Frames += uint64(n)
		}
	}
}

// drain waits up to d for the kernel to send what is on the TX ring.
func (s *socketSender) drain(ctx context.Context, d time.Duration, sent *Sent) error {
	for end := time.Now().Add(d); s.xsk.NumTransmitted() > 0 && ctx.Err() == nil && time.Now().Before(end); {
		if err := s.kick(); err != nil {
			return err
		}
		s.complete(sent)
	}
	s.complete(sent)
	return nil
}

// write stamps frame f as the program does: the sequence number, the
// time (0 in an untimed run), and with several flows the source port.
func (s *socketSender) write(f []byte, seq, now uint64) {
	binary.BigEndian.PutUint32(f[stampOffset+4:], uint32(seq))
	binary.BigEndian.PutUint64(f[stampOffset+8:], now)
	if s.flows > 1 {
		binary.BigEndian.PutUint16(f[34:], s.sportBase+uint16(seq%uint64(s.flows)))
	}
}

// kick asks the kernel to send what the TX ring holds: copy mode sends
// in sendto, txBatch frames a call. EAGAIN (more to send) and EBUSY
// (the port's queue is full) are no error.
func (s *socketSender) kick() error {
	_, _, errno := unix.Syscall6(unix.SYS_SENDTO, uintptr(s.xsk.FD()), 0, 0, uintptr(unix.MSG_DONTWAIT), 0, 0)
	switch errno {
	case 0, unix.EAGAIN, unix.EBUSY, unix.EINTR:
		return nil
	}
	return fmt.Errorf("generator: AF_XDP socket on ifindex %d: sendto: %w", s.ifindex, errno)
}

// sleep sleeps the calling thread for d. Go's time.Sleep wakes a short
// sleep only at the scheduler's next timer check, up to about a
// millisecond late when the process is otherwise idle: a millisecond is
// 160 frames at 1 Gb/s, and a paced generator that oversleeps by it
// offers less than the rate asked.
func sleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}
