// Package fence drops, at a data port's traffic-control ingress hook,
// every frame the kernel's stack would otherwise receive there.
//
// XDP runs before the hook: while forwarderd's programs are attached the
// fence sees nothing, since they redirect every frame. When no program is
// attached (forwarderd stopped, crash-looping, restarting, or a port the
// self-test left), nothing on the data port reaches the stack. The fence is
// a cls_bpf filter added over netlink, so it belongs to the interface, not
// to a process: it stays when the process that added it dies.
package fence

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// name is the filter's name, as `tc filter show dev IF ingress` lists it.
const name = "ncpos-fence"

// The fence is the last ingress filter: a filter of higher priority (the
// lab's simulated bypass relay, at 1) decides first.
const (
	fencePriority = 0xc000
	fenceHandle   = 0xfe0c
)

// tcActShot is TC_ACT_SHOT: drop the packet.
const tcActShot = 2

func filter(ifindex, fd int) *netlink.BpfFilter {
	return &netlink.BpfFilter{
		FilterAttrs: netlink.FilterAttrs{
			LinkIndex: ifindex,
			Parent:    netlink.HANDLE_MIN_INGRESS,
			Handle:    fenceHandle,
			Protocol:  unix.ETH_P_ALL,
			Priority:  fencePriority,
		},
		Fd:           fd,
		Name:         name,
		DirectAction: true,
	}
}

// Install puts the fence on ifname (replacing an older one).
func Install(ifname string) error {
	l, err := netlink.LinkByName(ifname)
	if err != nil {
		return fmt.Errorf("fence: %s: %w", ifname, err)
	}
	qd := &netlink.GenericQdisc{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT},
		QdiscType:  "clsact",
	}
	if err := netlink.QdiscAdd(qd); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("fence: clsact qdisc on %s: %w", ifname, err)
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "ncpos_fence",
		Type: ebpf.SchedCLS,
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R0, tcActShot),
			asm.Return(),
		},
		License: "BSD",
	})
	if err != nil {
		return fmt.Errorf("fence: loading the drop program: %w", err)
	}
	defer prog.Close() // the filter keeps its own reference
	if err := netlink.FilterReplace(filter(l.Attrs().Index, prog.FD())); err != nil {
		return fmt.Errorf("fence: ingress filter on %s: %w", ifname, err)
	}
	return nil
}

// Installed reports whether ifname has the fence.
func Installed(ifname string) (bool, error) {
	l, err := netlink.LinkByName(ifname)
	if err != nil {
		return false, fmt.Errorf("fence: %s: %w", ifname, err)
	}
	fs, err := netlink.FilterList(l, netlink.HANDLE_MIN_INGRESS)
	if err != nil {
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
			return false, nil // no clsact qdisc
		}
		return false, fmt.Errorf("fence: listing ingress filters of %s: %w", ifname, err)
	}
	for _, f := range fs {
		if bf, ok := f.(*netlink.BpfFilter); ok && bf.Name == name {
			return true, nil
		}
	}
	return false, nil
}

// Remove takes the fence off ifname; a port without one is left as it is.
func Remove(ifname string) error {
	l, err := netlink.LinkByName(ifname)
	if err != nil {
		return fmt.Errorf("fence: %s: %w", ifname, err)
	}
	if err := netlink.FilterDel(filter(l.Attrs().Index, 0)); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("fence: removing from %s: %w", ifname, err)
	}
	return nil
}
