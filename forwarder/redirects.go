package forwarder

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/forwarder/bpf"
)

// A redirect the program asked for can still fail in the kernel, after the
// program returned: the frame is longer than the peer's MTU allows, the
// peer's driver has no XDP transmit, or the peer is down. The kernel drops
// those frames and counts them nowhere but in the tracepoint
// xdp:xdp_redirect_err, which fires on such errors only; redirectCounters
// attaches port.c's program to it, which counts into the ports' drop
// reasons.
//
// The frames a peer's driver does not take when the redirect queue is
// flushed (its ring full) are seen in xdp:xdp_devmap_xmit too, but that
// tracepoint fires on every flush, a cost every frame would pay (about
// 10 ns a frame on the lab's veths): they are counted from the interface
// counters instead, as kernel_tx where the driver counts them (veth) and
// egress_lost where it does not (see accountLost).
type redirectCounters struct {
	progs []*ebpf.Program
	links []link.Link
	// The port slot of each port program's ID, as ports are attached and
	// detached.
	progSlots *ebpf.Map
}

// tracepointFields are the record fields port.c reads, with the offsets it
// reads them at.
var tracepointFields = map[string]map[string]int{
	"xdp_redirect_err": {"prog_id": 8, "err": 20},
}

// checkFormat reads a tracepoint's format file and says whether every
// field port.c reads is where it reads it.
func checkFormat(format []byte, want map[string]int) error {
	got := map[string]int{}
	for _, line := range strings.Split(string(format), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "field:") {
			continue
		}
		var name string
		off := -1
		for _, part := range strings.Split(line, ";") {
			part = strings.TrimSpace(part)
			switch {
			case strings.HasPrefix(part, "field:"):
				f := strings.Fields(strings.TrimPrefix(part, "field:"))
				if len(f) > 0 {
					name = f[len(f)-1]
				}
			case strings.HasPrefix(part, "offset:"):
				off, _ = strconv.Atoi(strings.TrimPrefix(part, "offset:"))
			}
		}
		got[name] = off
	}
	for name, off := range want {
		o, ok := got[name]
		if !ok {
			return fmt.Errorf("no field %s", name)
		}
		if o != off {
			return fmt.Errorf("field %s at offset %d, the counter reads it at %d", name, o, off)
		}
	}
	return nil
}

// newRedirectCounters loads and attaches the tracepoint program over the
// engine's port counters; add tells them each port's slot. Tracepoints
// are found through tracefs; where none is mounted (the appliance) it is
// mounted in a mount namespace of this goroutine's own thread, which ends
// with it, so nothing stays mounted.
func newRedirectCounters(spec *ebpf.CollectionSpec, counts *ebpf.Map) (_ *redirectCounters, err error) {
	rc := &redirectCounters{}
	defer func() {
		if err != nil {
			rc.close()
		}
	}()
	if rc.progSlots, err = newSharedMap(spec, bpf.DatapathMapProgSlots, 0); err != nil {
		return nil, err
	}
	maps := map[string]*ebpf.Map{bpf.DatapathMapPortCounts: counts, bpf.DatapathMapProgSlots: rc.progSlots}
	type tp struct{ prog, event string }
	tps := []tp{{bpf.DatapathProgRedirectErr, "xdp_redirect_err"}}
	for _, t := range tps {
		prog, err := loadProgram(spec, t.prog, maps)
		if err != nil {
			return nil, err
		}
		rc.progs = append(rc.progs, prog)
	}
	done := make(chan error)
	go func() {
		// Never unlocked: the thread, and any mount namespace it made,
		// goes away with this goroutine.
		runtime.LockOSThread()
		done <- func() error {
			dir, err := tracefsDir()
			if err != nil {
				return err
			}
			for i, t := range tps {
				format, err := os.ReadFile(filepath.Join(dir, "events/xdp", t.event, "format"))
				if err != nil {
					return fmt.Errorf("reading the format of xdp:%s: %w", t.event, err)
				}
				if err := checkFormat(format, tracepointFields[t.event]); err != nil {
					return fmt.Errorf("xdp:%s has another layout than this forwarder reads: %w", t.event, err)
				}
				l, err := link.Tracepoint("xdp", t.event, rc.progs[i], nil)
				if err != nil {
					return fmt.Errorf("attaching to xdp:%s: %w", t.event, err)
				}
				rc.links = append(rc.links, l)
			}
			return nil
		}()
	}()
	if err := <-done; err != nil {
		return nil, fmt.Errorf("forwarder: counting redirect failures: %w", err)
	}
	return rc, nil
}

// tracefsDir returns where tracefs is mounted, mounting it at
// /sys/kernel/tracing in a private mount namespace of the calling thread
// (locked) when it is nowhere.
func tracefsDir() (string, error) {
	const canonical = "/sys/kernel/tracing"
	for _, d := range []string{canonical, "/sys/kernel/debug/tracing"} {
		var st unix.Statfs_t
		if unix.Statfs(d, &st) == nil && st.Type == unix.TRACEFS_MAGIC {
			return d, nil
		}
	}
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return "", fmt.Errorf("no tracefs mounted, and a mount namespace to mount one: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return "", fmt.Errorf("making mounts private: %w", err)
	}
	if err := unix.Mount("tracefs", canonical, "tracefs", 0, ""); err != nil {
		return "", fmt.Errorf("mounting tracefs on %s: %w", canonical, err)
	}
	return canonical, nil
}

// add counts the failed redirects of the port program progID into port
// slot.
func (rc *redirectCounters) add(progID, slot uint32) error {
	return rc.progSlots.Put(progID, slot)
}

// remove forgets a detached port's program.
func (rc *redirectCounters) remove(progID uint32) {
	rc.progSlots.Delete(progID)
}

func (rc *redirectCounters) close() error {
	var errs []error
	for _, l := range rc.links {
		errs = append(errs, l.Close())
	}
	for _, p := range rc.progs {
		errs = append(errs, p.Close())
	}
	if rc.progSlots != nil {
		errs = append(errs, rc.progSlots.Close())
	}
	return errors.Join(errs...)
}
