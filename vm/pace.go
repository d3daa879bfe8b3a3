package vm

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"time"
)

// Guest pace: without KVM a guest runs in software emulation, and on a
// host whose cores are shared with other guests (or anything else) it runs
// several times slower than alone. A wait written for a guest alone then
// expires while the guest is still doing the right thing, slowly. The VM
// tests scale their waits, never their checks of behaviour, by how slowly
// the guest really ran, which its kernel tells: the serial console's
// timestamp of the line where the kernel starts init is the guest's own
// clock, which under software emulation follows the host's, so it says how
// long the kernel took to boot, at every boot. The first boot's time to
// /healthz, firmware and daemons included, covers more of the guest's work
// and says more: the slower of the two counts.
const (
	// UnloadedInit is when the kernel starts init in a guest alone on an
	// idle 2-core host (SeaBIOS and OVMF alike: the firmware runs before
	// the kernel's clock starts); measured 2.9 to 3.2 s.
	UnloadedInit = 3 * time.Second
	// UnloadedBIOS and UnloadedUEFI are a guest's time from QEMU's start
	// to /healthz alone on that host (measured 13.4 s and 23.3 s).
	UnloadedBIOS = 13 * time.Second
	UnloadedUEFI = 23 * time.Second
)

// MaxPace caps the factor: a guest slower than this is broken, not slow,
// and a wait stretched further would only hide it. A development kernel
// (lockdep, KASAN) is slow by design, and a run of the tests under one
// raises the cap (NCPOS_VM_KERNEL).
var MaxPace = 5.0

// initLine is the kernel's "Run /gokrazy/init as init process" with its
// printk timestamp in seconds.
var initLine = regexp.MustCompile(`\[\s*(\d+\.\d+)\] Run /gokrazy/init as init process`)

// Pace is how a guest ran: the kernel's time to init at each boot the
// serial console shows, the first boot's time to /healthz, and the factor
// waits are scaled by.
type Pace struct {
	Inits   []time.Duration // time to init, boot by boot
	Healthz time.Duration   // the first boot's, from QEMU's start; 0 = not known
	UEFI    bool            // the firmware that boot ran
	Factor  float64         // the slowest against an unloaded run, within [1, MaxPace]
}

// PaceOf reads a serial console's text and, when known (not 0), the time
// the first boot took to answer /healthz under the given firmware. With no
// boot seen yet the factor is 1.
func PaceOf(console []byte, healthz time.Duration, uefi bool) Pace {
	p := Pace{Factor: 1, Healthz: healthz, UEFI: uefi}
	if healthz > 0 {
		p.Factor = max(p.Factor, float64(healthz)/float64(p.unloaded()))
	}
	for _, m := range initLine.FindAllSubmatch(console, -1) {
		s, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			continue
		}
		d := time.Duration(s * float64(time.Second))
		p.Inits = append(p.Inits, d)
		if f := float64(d) / float64(UnloadedInit); f > p.Factor {
			p.Factor = f
		}
	}
	p.Factor = min(p.Factor, MaxPace)
	return p
}

func (p Pace) unloaded() time.Duration {
	if p.UEFI {
		return UnloadedUEFI
	}
	return UnloadedBIOS
}

// String is "pace 1.80× (to /healthz 23.4s, 13s unloaded; kernel to init
// 5.4s, 4.1s, 3s unloaded; at most 5×)".
func (p Pace) String() string {
	inits := ""
	for i, d := range p.Inits {
		if i > 0 {
			inits += ", "
		}
		inits += d.Round(100 * time.Millisecond).String()
	}
	if inits == "" {
		inits = "no boot seen"
	}
	healthz := "not measured"
	if p.Healthz > 0 {
		healthz = fmt.Sprintf("%v, %v unloaded", p.Healthz.Round(100*time.Millisecond), p.unloaded())
	}
	return fmt.Sprintf("pace %.2f× (to /healthz %s; kernel to init %s, %v unloaded; at most %.0f×)", p.Factor, healthz, inits, UnloadedInit, MaxPace)
}

// Pace reads the VM's serial console. A VM whose console is the terminal
// runs at pace 1.
func (v *VM) Pace() Pace {
	if v.Options.SerialLog == "" {
		return Pace{Factor: 1}
	}
	b, _ := os.ReadFile(v.Options.SerialLog)
	return PaceOf(b, v.firstHealthz, v.Options.UEFI)
}

// SetFirstBoot records how long the VM's first boot took from QEMU's start
// to /healthz, for its pace.
func (v *VM) SetFirstBoot(d time.Duration) { v.firstHealthz = d }

// Within scales a wait written for a guest alone on the host by the
// guest's pace so far: the slowest of its boots.
func (v *VM) Within(d time.Duration) time.Duration { return Within(d, v) }

// Within scales a wait that spans several guests by the slowest of them.
func Within(d time.Duration, vms ...*VM) time.Duration {
	f := 1.0
	for _, v := range vms {
		f = max(f, v.Pace().Factor)
	}
	return time.Duration(float64(d) * f)
}
