package forwarder

import (
	"fmt"
	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestPlanCPUs(t *testing.T) {
	tests := []struct {
		online         []int
		cores          int
		wantFwd, wantM []int
		note           bool
	}{
		{[]int{0, 1}, 0, []int{1}, []int{0}, false},
		{[]int{0, 1, 2, 3}, 0, []int{1, 2, 3}, []int{0}, false},
		{[]int{0, 1, 2, 3}, 2, []int{2, 3}, []int{0, 1}, false},
		{[]int{0, 1, 2, 3}, 4, []int{0, 1, 2, 3}, []int{}, true},
		{[]int{0, 1, 2, 3}, 9, []int{0, 1, 2, 3}, []int{}, true},
		{[]int{0}, 0, []int{0}, nil, true},
		{[]int{0, 2, 4}, 1, []int{4}, []int{0, 2}, false},
	}
	for _, tt := range tests {
		fwd, mgmt, note := planCPUs(tt.online, tt.cores)
		if !slices.Equal(fwd, tt.wantFwd) || !slices.Equal(mgmt, tt.wantM) || (note != "") != tt.note {
			t.Errorf("PlanCPUs(%v, %d) = %v, %v, %q; want %v, %v, note %v", tt.online, tt.cores, fwd, mgmt, note, tt.wantFwd, tt.wantM, tt.note)
		}
	}
}

// fakeChannels is a driver with a queue count it remembers.
type fakeChannels struct {
	ch  map[string]Channels
	err map[string]error
	set []string
}

func (f *fakeChannels) Get(ifname string) (Channels, error) {
	if err := f.err[ifname]; err != nil {
		return Channels{}, err
	}
	return f.ch[ifname], nil
}

func (f *fakeChannels) Set(ifname string, c Channels) error {
	f.set = append(f.set, fmt.Sprintf("%s combined=%d rx=%d tx=%d", ifname, c.Combined, c.Rx, c.Tx))
	cur := f.ch[ifname]
	cur.Combined, cur.Rx, cur.Tx = c.Combined, c.Rx, c.Tx
	f.ch[ifname] = cur
	return nil
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestAssociate(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "sys/devices/system/cpu/online"), "0-3\n")
	// eth1: an I350 with per-queue vectors; eth2: i40e names; veth0: virtual.
	for _, irq := range []string{"40", "41", "42", "43", "44"} {
		writeFile(t, filepath.Join(root, "sys/class/net/eth1/device/msi_irqs", irq), "msix\n")
	}
	for _, irq := range []string{"50", "51", "52"} {
		writeFile(t, filepath.Join(root, "sys/class/net/eth2/device/msi_irqs", irq), "msix\n")
	}
	writeFile(t, filepath.Join(root, "proc/interrupts"), strings.Join([]string{
		"           CPU0       CPU1       CPU2       CPU3",
		"  0:         10          0          0          0   IO-APIC   2-edge      timer",
		" 40:          1          0          0          0   PCI-MSIX-0000:01:00.0   0-edge      eth1",
		" 41:        100          0          0          0   PCI-MSIX-0000:01:00.0   1-edge      eth1-TxRx-0",
		" 42:        100          0          0          0   PCI-MSIX-0000:01:00.0   2-edge      eth1-TxRx-1",
		" 43:        100          0          0          0   PCI-MSIX-0000:01:00.0   3-edge      eth1-TxRx-2",
		" 44:        100          0          0          0   PCI-MSIX-0000:01:00.0   4-edge      eth1-TxRx-3",
		" 50:          1          0          0          0   PCI-MSIX-0000:02:00.0   0-edge      i40e-0000:02:00.0:misc",
		" 51:        100          0          0          0   PCI-MSIX-0000:02:00.0   1-edge      i40e-eth2-TxRx-0",
		" 52:        100          0          0          0   PCI-MSIX-0000:02:00.0   2-edge      i40e-eth2-TxRx-1",
		"NMI:          0          0          0          0   Non-maskable interrupts",
	}, "\n"))
	for _, irq := range []string{"40", "41", "42", "43", "44", "50", "51", "52"} {
		writeFile(t, filepath.Join(root, "proc/irq", irq, "smp_affinity_list"), "0-3\n")
	}
	drv := &fakeChannels{
		ch: map[string]Channels{
			"eth1":  {MaxCombined: 8, Combined: 4},
			"eth2":  {MaxCombined: 2, Combined: 2},
			"veth0": {MaxRx: 4, MaxTx: 4, Rx: 4, Tx: 4},
		},
		err: map[string]error{"lo": fmt.Errorf("operation not supported")},
	}
	a := &coreAssociator{root: root, channels: drv}
	plan := a.Associate([]string{"eth1", "eth2", "veth0", "lo"}, 0)

	if !slices.Equal(plan.Forwarding, []int{1, 2, 3}) || !slices.Equal(plan.Management, []int{0}) {
		t.Fatalf("forwarding %v management %v, want [1 2 3] [0]", plan.Forwarding, plan.Management)
	}
	wantSet := []string{"eth1 combined=3 rx=0 tx=0", "veth0 combined=0 rx=3 tx=3"}
	if !slices.Equal(drv.set, wantSet) {
		t.Errorf("channel changes %q, want %q", drv.set, wantSet)
	}
	queues := func(pc forwarderapi.PortCores) string {
		var s []string
		for _, q := range pc.Queues {
			s = append(s, fmt.Sprintf("q%d:cpu%d:%v:%s", q.Queue, q.CPU, q.IRQs, q.IRQ))
		}
		return strings.Join(s, " ")
	}
	want := map[string]string{
		"eth1":  "q0:cpu1:[41]:pinned q1:cpu2:[42]:pinned q2:cpu3:[43]:pinned",
		"eth2":  "q0:cpu1:[51]:pinned q1:cpu2:[52]:pinned",
		"veth0": "q0:cpu1:[]:none (virtual device) q1:cpu2:[]:none (virtual device) q2:cpu3:[]:none (virtual device)",
		"lo":    "q0:cpu1:[]:none (virtual device)",
	}
	for _, pc := range plan.Ports {
		if got := queues(pc); got != want[pc.Interface] {
			t.Errorf("%s: %s\n want %s (channels: %s)", pc.Interface, got, want[pc.Interface], pc.Channels)
		}
	}
	if !strings.HasPrefix(plan.Ports[3].Channels, "kept") {
		t.Errorf("lo channels %q, want kept with the error", plan.Ports[3].Channels)
	}
	for irq, cpu := range map[string]string{"41": "1", "42": "2", "43": "3", "51": "1", "52": "2", "40": "0-3", "50": "0-3"} {
		b, _ := os.ReadFile(filepath.Join(root, "proc/irq", irq, "smp_affinity_list"))
		if got := strings.TrimSpace(string(b)); got != cpu {
			t.Errorf("irq %s affinity %s, want %s", irq, got, cpu)
		}
	}
}
