package forwarder

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/sysinfo"
)

// planCPUs chooses the forwarding CPUs: cores of them (0 = all but one),
// taken from the end of the online list so that CPU 0, where the kernel
// does most of its housekeeping, stays with management. With a single CPU
// it forwards and manages on the same one.
func planCPUs(online []int, cores int) (fwd, mgmt []int, note string) {
	n := len(online)
	switch {
	case n == 0:
		return nil, nil, "no online CPUs found"
	case n == 1:
		return online, nil, "one CPU: it forwards and manages"
	case cores <= 0:
		cores = n - 1
	case cores >= n:
		note = fmt.Sprintf("%d forwarding cores asked, %d online: all forward, none is kept for management", cores, n)
		cores = n
	}
	return online[n-cores:], online[:n-cores], note
}

// coreAssociator sets queue counts and IRQ affinities. root is "/" on the
// appliance; tests give a fake tree with sys/ and proc/.
type coreAssociator struct {
	root     string
	channels channelDriver
}

// OnlineCPUs reads /sys/devices/system/cpu/online under root.
func (a *coreAssociator) OnlineCPUs() ([]int, error) {
	return sysinfo.CPUs(a.root, "online")
}

// Associate plans the forwarding CPUs and, for each interface, sets its
// queue count to the number of forwarding CPUs (within what the driver
// allows) and pins each queue's interrupts to its CPU: queue q is served by
// forwarding CPU q mod n. Problems are reported per port rather than
// failing: a driver that cannot change channels still forwards.
func (a *coreAssociator) Associate(ifnames []string, cores int) forwarderapi.CorePlan {
	var plan forwarderapi.CorePlan
	online, err := a.OnlineCPUs()
	if err != nil {
		plan.Note = err.Error()
		online = []int{0}
	}
	plan.Online = online
	plan.Forwarding, plan.Management, plan.Note = planCPUs(online, cores)
	if err != nil {
		plan.Note = err.Error()
	}
	irqs := a.queueIRQs()
	for _, ifname := range ifnames {
		plan.Ports = append(plan.Ports, a.associatePort(ifname, plan.Forwarding, irqs))
	}
	return plan
}

func (a *coreAssociator) associatePort(ifname string, fwd []int, irqs map[string]map[int][]int) forwarderapi.PortCores {
	pc := forwarderapi.PortCores{Interface: ifname}
	nq := 1
	ch, err := a.channels.Get(ifname)
	switch {
	case err != nil:
		pc.Channels = fmt.Sprintf("kept: %v", err)
	default:
		want := uint32(max(len(fwd), 1))
		nq, pc.Channels = a.setChannels(ifname, ch, want)
	}
	devIRQs := a.deviceIRQs(ifname)
	byQueue := irqs[ifname]
	for q := 0; q < nq; q++ {
		qc := forwarderapi.QueueCore{Queue: q, CPU: -1}
		if len(fwd) > 0 {
			qc.CPU = fwd[q%len(fwd)]
		}
		switch {
		case devIRQs == nil:
			qc.IRQ = "none (virtual device)"
		case len(byQueue[q]) == 0:
			qc.IRQ = "no interrupt named for this queue in /proc/interrupts"
		default:
			qc.IRQs = byQueue[q]
			qc.IRQ = "pinned"
			for _, irq := range byQueue[q] {
				if !devIRQs[irq] {
					continue
				}
				if err := a.pinIRQ(irq, qc.CPU); err != nil {
					qc.IRQ = err.Error()
				}
			}
		}
		pc.Queues = append(pc.Queues, qc)
	}
	return pc
}

// setChannels sets combined (or rx/tx) queue counts to want, capped by the
// driver's maximum, and returns the resulting number of receive queues.
func (a *coreAssociator) setChannels(ifname string, ch Channels, want uint32) (int, string) {
	cur := max(ch.Combined+ch.Rx, 1)
	var next Channels
	switch {
	case ch.MaxCombined > 0:
		next = Channels{Combined: min(want, ch.MaxCombined), Other: ch.Other}
		if ch.MaxRx > 0 || ch.MaxTx > 0 {
			next.Rx, next.Tx = 0, 0
		}
	case ch.MaxRx > 0:
		next = Channels{Rx: min(want, ch.MaxRx), Tx: min(want, max(ch.MaxTx, 1)), Other: ch.Other}
		if ch.MaxTx == 0 {
			next.Tx = ch.Tx
		}
	default:
		return int(cur), fmt.Sprintf("kept %d: the driver reports no adjustable channels", cur)
	}
	got := next.Combined + next.Rx
	if next == (Channels{Combined: ch.Combined, Rx: ch.Rx, Tx: ch.Tx, Other: ch.Other}) {
		return int(got), fmt.Sprintf("%d queues, as wanted (max %d)", got, max(ch.MaxCombined, ch.MaxRx))
	}
	if err := a.channels.Set(ifname, next); err != nil {
		return int(cur), fmt.Sprintf("kept %d: %v", cur, err)
	}
	return int(got), fmt.Sprintf("set %d queues (was %d, max %d)", got, cur, max(ch.MaxCombined, ch.MaxRx))
}

// deviceIRQs lists the MSI interrupts of the interface's device, or nil for
// a device without them (veth, virtio without MSI-X).
func (a *coreAssociator) deviceIRQs(ifname string) map[int]bool {
	entries, err := os.ReadDir(filepath.Join(a.root, "sys/class/net", ifname, "device/msi_irqs"))
	if err != nil {
		return nil
	}
	irqs := map[int]bool{}
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			irqs[n] = true
		}
	}
	return irqs
}

// queueNameRE finds the queue number at the end of an interrupt name:
// "eth1-TxRx-3", "i40e-eth1-TxRx-3", "ice-eth1-TxRx-3", "eth1-rx-3",
// "virtio0-input.3".
var queueNameRE = regexp.MustCompile(`(?i)(?:txrx|rx|tx|input|output|queue|fp)[-._]?(\d+)$`)

// queueIRQs maps interface name -> queue -> IRQs, from /proc/interrupts.
// Names that carry no interface name are attributed by the device's MSI
// list in associatePort.
func (a *coreAssociator) queueIRQs() map[string]map[int][]int {
	out := map[string]map[int][]int{}
	f, err := os.Open(filepath.Join(a.root, "proc/interrupts"))
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		irq, err := strconv.Atoi(strings.TrimSuffix(fields[0], ":"))
		if err != nil {
			continue
		}
		name := fields[len(fields)-1]
		m := queueNameRE.FindStringSubmatchIndex(name)
		if m == nil {
			continue
		}
		q, _ := strconv.Atoi(name[m[2]:m[3]])
		prefix := strings.TrimRight(name[:m[0]], "-._")
		// The interface name is the last dash-separated part that is
		// not the driver's: "i40e-eth1" -> "eth1"; keep both forms.
		for _, key := range ifaceKeys(prefix) {
			if out[key] == nil {
				out[key] = map[int][]int{}
			}
			out[key][q] = append(out[key][q], irq)
		}
	}
	for _, byQ := range out {
		for q := range byQ {
			sort.Ints(byQ[q])
		}
	}
	return out
}

func ifaceKeys(prefix string) []string {
	keys := []string{prefix}
	if i := strings.Index(prefix, "-"); i >= 0 {
		keys = append(keys, prefix[i+1:])
	}
	return keys
}

func (a *coreAssociator) pinIRQ(irq, cpu int) error {
	if cpu < 0 {
		return fmt.Errorf("irq %d: no forwarding CPU", irq)
	}
	path := filepath.Join(a.root, "proc/irq", strconv.Itoa(irq), "smp_affinity_list")
	if err := os.WriteFile(path, []byte(strconv.Itoa(cpu)+"\n"), 0o644); err != nil {
		return fmt.Errorf("irq %d -> cpu %d: %w", irq, cpu, err)
	}
	return nil
}
