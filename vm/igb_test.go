package vm

import (
	"bytes"
	"errors"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/internal/testenv"
	"github.com/ncpos/ncpos/ipc/health"
	"github.com/ncpos/ncpos/web/api"
)

// requireDevice wants QEMU to emulate the NIC model (QEMU 8 and later have
// "igb", the Intel 82576; scripts/deps.sh installs QEMU 10 from Debian's
// bookworm-backports for it).
func requireDevice(t *testing.T, model string) {
	t.Helper()
	out, err := exec.Command("qemu-system-x86_64", "-device", "help").Output()
	if err == nil && !bytes.Contains(out, []byte(`name "`+model+`"`)) {
		err = errors.New("this QEMU has no " + model + " device (QEMU 8 or later has it; scripts/deps.sh installs QEMU 10 from bookworm-backports)")
	}
	testenv.Need(t, testenv.QEMU, err)
}

// TestWireOnIgbPorts boots an image for the qemu-igb profile: LAN1 to
// LAN3 are Intel 82576 ports (QEMU's igb: the driver of the 82576 and
// 82580 boxes, which redirects natively), LAN1 and LAN2 the two functions
// of a dual-port card, and LAN4 an 82574L (e1000e, native with ncpos's
// kernel), each cabled to a UDP socket of the test: seg1 pairs two igb
// ports, seg2 an igb with an e1000e. Both run native both ways; every
// frame of the wire set crosses both segments both ways bit for bit; VLAN
// offloads are off on every Intel port; a cable pulled with QMP set_link
// on an igb port is seen by the guest and shown, with no reset, and comes
// back; so does one pulled on the e1000e port (with QEMU 10 or later); the
// guest's kernel warns of nothing.
func TestWireOnIgbPorts(t *testing.T) {
	requireQEMU(t)
	requireDevice(t, "igb")
	t.Parallel()
	cfg := strings.Replace(string(wireConfig()), `platform = "qemu"`, `platform = "qemu-igb"`, 1)
	img := testImage(t, "igb", []byte(cfg))
	cables, wires := newCables(t, 4)
	v, serial := boot(t, img, false, func(o *Options) {
		// As the qemu-igb profile places them: QEMU's igb gives each
		// port SR-IOV functions 16 slots up, which ports in neighbouring
		// slots would share.
		o.DataModels = []string{"igb", "igb", "igb", "e1000e"}
		o.DataAddrs = []string{"04.0", "04.1", "06.0", "07.0"}
		o.Wires = wires
	})
	waitForwardingNormally(t, v, 5*time.Minute, "seg1", "seg2")
	before := waitPastGrace(t, v)

	var ports struct{ Ports []api.Port }
	getAPI(t, v, "api/v1/ports", &ports)
	checkIgbPorts(t, ports.Ports)

	crossWireSet(t, cables)

	// A cable pulled on an igb port: the guest sees it, the box shows it
	// and is not reset; plugged back, the link returns.
	pullAndPlug(t, v, "lan2", "seg1", "LAN2", true)
	// The same on the e1000e port, native too: QEMU 10's e1000e tells
	// the guest (an older one is only reported).
	pullAndPlug(t, v, "lan4", "seg2", "LAN4", qemuMajor(t) >= 10)
	noResetSince(t, v, before)
	noKernelTrouble(t, serial)
}

// qemuMajor is the major version of the QEMU the tests run.
func qemuMajor(t *testing.T) int {
	t.Helper()
	out, err := exec.Command("qemu-system-x86_64", "--version").Output()
	if err != nil {
		t.Fatalf("qemu-system-x86_64 --version: %v", err)
	}
	m := regexp.MustCompile(`version (\d+)\.`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("qemu-system-x86_64 --version says %q, with no version", out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// checkIgbPorts wants every port native, the mixed seg2 too (ncpos's
// kernel gives e1000e native XDP), and VLAN tag stripping off on all
// four, as the drivers read it back.
func checkIgbPorts(t *testing.T, ports []api.Port) {
	t.Helper()
	want := map[string]struct{ attach, why string }{
		"LAN1": {"native", ""},
		"LAN2": {"native", ""},
		"LAN3": {"native", ""},
		"LAN4": {"native", ""},
	}
	seen := 0
	for _, p := range ports {
		d := p.Datapath
		w, ok := want[p.Name]
		if p.Role != "data" || d == nil || !ok {
			continue
		}
		seen++
		t.Logf("%s (%s): %s (%s), settings %+v", p.Name, p.Interface, d.Attach, d.AttachWhy, d.Settings)
		if d.Attach != w.attach || !strings.Contains(d.AttachWhy, w.why) {
			t.Errorf("%s: attached %s (%s), want %s (%s)", p.Name, d.Attach, d.AttachWhy, w.attach, w.why)
		}
		results := map[string]string{}
		for _, s := range d.Settings {
			results[s.Name] = s.Result + "/" + s.Got
		}
		// Tag stripping must be off: a stripped tag would not leave the
		// peer. VLAN filtering, which igb and e1000e keep fixed on, lets
		// every tag through a promiscuous port (the wire set shows it).
		if r := results["rx-vlan-hw-parse"]; r != "set/off" && r != "already/off" {
			t.Errorf("%s: rx-vlan-hw-parse %q, want off as read back", p.Name, r)
		}
	}
	if seen != 4 {
		t.Errorf("%d data ports with datapath information, want 4", seen)
	}
}

// pullAndPlug pulls a port's cable with QMP set_link and plugs it back.
// must says whether the guest has to see it (link_down within 30 s and its
// end within 2 minutes of the replug); otherwise what the guest saw is
// only reported.
func pullAndPlug(t *testing.T, v *VM, netdev, seg, port string, must bool) {
	t.Helper()
	pulled := time.Now()
	if err := v.SetLink(netdev, false); err != nil {
		t.Fatal(err)
	}
	var shown time.Duration
	for deadline := pulled.Add(v.Within(30 * time.Second)); shown == 0 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if hasCondition(snapshot(t, v), health.LinkDown, seg, port) {
			shown = time.Since(pulled)
		}
	}
	if err := v.SetLink(netdev, true); err != nil {
		t.Fatal(err)
	}
	plugged := time.Now()
	switch {
	case shown == 0 && must:
		t.Errorf("%s's pulled cable (%s) not shown within 30 s: %s", port, netdev, conditionList(snapshot(t, v)))
		return
	case shown == 0:
		t.Logf("%s (%s): QMP set_link off, and the guest saw no link change in 30 s", port, netdev)
		return
	}
	t.Logf("%s (%s): QMP set_link off to link_down on the dashboard: %v", port, netdev, shown.Round(100*time.Millisecond))
	for deadline := plugged.Add(v.Within(2 * time.Minute)); ; time.Sleep(500 * time.Millisecond) {
		s := snapshot(t, v)
		if !cableOut(s, seg, port) {
			t.Logf("%s (%s): replug to the link seen again: %v", port, netdev, time.Since(plugged).Round(100*time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s's cable still shown out 2 minutes after the replug: %s", port, conditionList(s))
			return
		}
	}
}

// noResetSince fails if the box was reset since from: QEMU saw its
// watchdog fire or a reset, or the uptime grew less than the time passed.
func noResetSince(t *testing.T, v *VM, from *api.System) {
	t.Helper()
	for _, e := range v.Events() {
		if e.Name == "WATCHDOG" || e.Name == "RESET" {
			t.Fatalf("QEMU reported %s at %v: the box was reset", e.Name, e.At.Format(time.RFC3339))
		}
	}
	now := system(t, v)
	if now.UptimeSeconds < from.UptimeSeconds {
		t.Fatalf("uptime went from %.0f s to %.0f s: the box was reset", from.UptimeSeconds, now.UptimeSeconds)
	}
	if p := now.Watchdog.Petter; p != nil && !p.Petting {
		t.Fatalf("watchdogd stopped petting: %s", p.StoppedReason)
	}
}
