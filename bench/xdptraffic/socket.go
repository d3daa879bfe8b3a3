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
// whose policy refuses it (EPERM), as some sandboxes' kernels do. The
// generator then sends from an AF_XDP socket (Generator.Engine).
var ErrNoLiveFrames = errors.New("this kernel does not run BPF_PROG_RUN's live frames")

var live struct {
	once sync.Once
	err  error
}

// LiveFrames tells whether this kernel runs XDP programs in live-frame
// mode, once per process: it runs a program that drops its one frame, so
// nothing is sent. The error wraps ErrNoLiveFrames and the kernel's.
func LiveFrames() error {
	live.once.Do(func() { live.err = probeLiveFrames() })
	return live.err
}

func probeLiveFrames() error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "Dual BSD/GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 1 /* XDP_DROP */), asm.Return()}})
	if err != nil {
		return fmt.Errorf("%w: loading a program to try it: %w", ErrNoLiveFrames, err)
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
	flows     int
	sportBase uint16
	queued    atomic.Uint64 // frames handed to the kernel in the run under way
}

func newSocketSender(o GeneratorOptions, flows int) (*socketSender, error) {
	s := &socketSender{flows: flows, sportBase: o.SportBase}
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

// run sends as the program does: frame n, stamped with n and (timed) the
// clock, due at start + n/rate; a lag up to CatchUp caught up back to
// back, a longer one moving the schedule on. Frames counts what the
// kernel completed.
func (s *socketSender) run(ctx context.Context, snd Send, deadline time.Time, cpu int) (sent Sent, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cpu >= 0 {
		var set, old unix.CPUSet
		if err := unix.SchedGetaffinity(0, &old); err == nil {
			set.Set(cpu)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				return sent, fmt.Errorf("generator on CPU %d: %w", cpu, err)
			}
			defer unix.SchedSetaffinity(0, &old)
		}
	}
	defer func() {
		// asavie's Transmit panics on an unexpected sendto error.
		if r := recover(); r != nil {
			err = fmt.Errorf("generator: AF_XDP transmit: %v", r)
		}
	}()
	s.queued.Store(0)
	const batch = 64
	var interval time.Duration // 0: flat out
	if snd.RatePPS > 0 {
		interval = time.Duration(float64(time.Second) / snd.RatePPS)
	}
	complete := func() {
		if n := s.xsk.NumCompleted(); n > 0 {
			s.xsk.Complete(n)
			sent.Frames += uint64(n)
		}
	}
	var start time.Duration
	for queued := uint64(0); queued < snd.Frames; {
		complete()
		if ctx.Err() != nil || time.Now().After(deadline) {
			break
		}
		now := Monotonic()
		if queued == 0 {
			start = now
		}
		due := snd.Frames - queued
		if interval > 0 {
			since, next := now-start, time.Duration(queued)*interval
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
			if lag > CatchUp {
				shift := lag - CatchUp
				start += shift
				sent.Slipped += shift
				sent.Slips++
				since -= shift
			}
			due = min(uint64(since/interval)+1, snd.Frames) - queued
		}
		descs := s.xsk.GetDescs(int(min(due, batch, uint64(s.xsk.NumFreeTxSlots()))))
		if len(descs) == 0 {
			s.kick() // the ring is full: let the kernel send
			continue
		}
		stamp := uint64(0)
		if snd.Timed {
			stamp = uint64(now)
		}
		for i := range descs {
			f := s.xsk.GetFrame(descs[i])
			n := copy(f, snd.Frame)
			s.write(f[:n], queued+uint64(i), stamp)
			descs[i].Len = uint32(n)
		}
		if sent.First == 0 {
			sent.First = now
		}
		sent.Last = now
		queued += uint64(s.xsk.Transmit(descs)) // and sendto
		s.queued.Store(queued)
	}
	// What is queued goes out, or the port has stopped taking frames.
	for end := time.Now().Add(2 * time.Second); s.xsk.NumTransmitted() > 0 && time.Now().Before(end); {
		s.kick()
		complete()
	}
	complete()
	return sent, nil
}

// write stamps frame f as the program does: the sequence number, the
// time (0 in an untimed run), and with several flows the source port.
func (s *socketSender) write(f []byte, seq, now uint64) {
	binary.BigEndian.PutUint32(f[StampOffset+4:], uint32(seq))
	binary.BigEndian.PutUint64(f[StampOffset+8:], now)
	if s.flows > 1 {
		binary.BigEndian.PutUint16(f[34:], s.sportBase+uint16(seq%uint64(s.flows)))
	}
}

// kick asks the kernel to send what the TX ring holds: copy mode sends
// in sendto.
func (s *socketSender) kick() {
	unix.Syscall6(unix.SYS_SENDTO, uintptr(s.xsk.FD()), 0, 0, uintptr(unix.MSG_DONTWAIT), 0, 0)
}

// sleep sleeps the calling thread for d, without waiting for Go's
// scheduler's next timer check, which can be a millisecond late.
func sleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}
