package vm

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/image"
	"github.com/ncpos/ncpos/image/kernel"
	"github.com/ncpos/ncpos/internal/testenv"
	"github.com/ncpos/ncpos/web/api"
)

// The boot tests share images, each built once: the embedded default, and
// a watchdog test image (short timeouts, the test-only hangctl).
var (
	imgMu  sync.Mutex
	images = map[string]string{}
	imgDir string
)

func TestMain(m *testing.M) {
	if os.Getenv(devKernelEnv) != "" {
		MaxPace = devMaxPace
	}
	code := m.Run()
	ledger.print(os.Stdout, guestSlots)
	for _, dir := range []string{imgDir, ncposBuild.dir} {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

func requireQEMU(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("boots QEMU")
	}
	_, err := exec.LookPath("qemu-system-x86_64")
	if err == nil {
		err = image.CheckTools()
	}
	testenv.Need(t, testenv.QEMU, err)
}

// testImage builds (once) the image called name from configuration text
// (nil: the embedded default) plus extra programs. The test takes its
// guest slot first: images build while at most one guest per core runs
// beside them, and the first tests in line get theirs first.
func testImage(t *testing.T, name string, cfgText []byte, extra ...image.Program) string {
	t.Helper()
	needGuests(t, 1)
	imgMu.Lock()
	defer imgMu.Unlock()
	if p, ok := images[name]; ok {
		return p
	}
	if imgDir == "" {
		var err error
		if imgDir, err = os.MkdirTemp("", "ncpos-vmtest-"); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config.Default()
	if cfgText == nil {
		cfgText = config.DefaultTOML()
	} else {
		var err error
		if cfg, err = config.Parse(name+".toml", cfgText); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(imgDir, name+".img")
	res, err := image.Build(context.Background(), image.Options{
		Config: cfg, ConfigTOML: cfgText,
		Kernel: testKernel(t), Size: 512e6, Output: p,
		BuildID: name + "-" + time.Now().UTC().Format("150405"), ControlPassword: testPassword,
		TestPrograms: extra, SigningKey: testSigningKey, QuickRoot: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("image %s: %d bytes, %d allocated, root squashfs %d bytes, built in %v",
		name, res.Size, res.BytesUsed, res.RootBytes, res.Duration.Round(time.Millisecond))
	images[name] = p
	return p
}

const testPassword = "vm-test-password"

// testSigningKey signs the test images, which trust it: the key of the
// tests' build host.
var testSigningKey = func() ed25519.PrivateKey {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}()

// boot starts the test image, once the test holds a guest slot, and waits
// for /healthz through the forwarded management port.
func boot(t *testing.T, img string, uefi bool, opts ...func(*Options)) (*VM, string) {
	t.Helper()
	needGuests(t, 1)
	ports := make([]int, 3)
	for i := range ports {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = p
	}
	dir := t.TempDir()
	for attempt := 1; ; attempt++ {
		serial := filepath.Join(dir, fmt.Sprintf("serial-%d.log", attempt))
		ctx, cancel := context.WithCancel(context.Background())
		o := Options{Image: img, UEFI: uefi, DataNICs: 4, StatusPort: ports[0], HTTPPort: ports[1],
			Forwards: map[int]int{ports[2]: 8081}, SerialLog: serial, Snapshot: true}
		for _, f := range opts {
			f(&o)
		}
		if os.Getenv(devKernelEnv) != "" && o.WatchdogAction == "" {
			// init arms the watchdog, and watchdogd takes it over
			// after the device's first 30 s: more than a
			// development kernel's boot leaves.
			o.WatchdogAction = "none"
		}
		v, err := Start(ctx, o, os.Stderr)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		took, err := waitBoot(v, serial, time.Duration(float64(6*time.Minute)*MaxPace/5), 2*time.Minute)
		if errors.Is(err, errStalled) && attempt == 1 {
			t.Logf("QEMU stalled during boot (%v), its serial console ending %q: starting it again, once", err, lastLine(serial))
			cancel()
			v.Kill()
			continue
		}
		t.Cleanup(func() {
			cancel()
			v.Kill()
			if t.Failed() {
				t.Logf("the waits of this test were scaled by the guest's %v", v.Pace())
				b, _ := os.ReadFile(serial)
				if len(b) > 8000 {
					b = b[len(b)-8000:]
				}
				t.Logf("serial console (tail):\n%s", b)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		v.SetFirstBoot(took)
		t.Logf("boot to /healthz: %v (firmware uefi=%v), %v", took.Round(100*time.Millisecond), uefi, v.Pace())
		return v, serial
	}
}

// devKernelEnv names a development kernel's bzImage (NCPOS_KERNEL_DEBUG=1
// bash image/kernel/build.sh) for the test images, in place of the
// embedded kernel: the VM tests then run under lockdep and KASAN, and
// noKernelTrouble reads what those report. Such a kernel boots some
// eight times slower in software emulation, so the tests' waits may
// stretch up to devMaxPace, and the watchdog's firing is left alone
// (needWatchdogReset: the tests of the reset itself do not run).
const (
	devKernelEnv = "NCPOS_VM_KERNEL"
	devMaxPace   = 20.0
)

// needWatchdogReset skips a test that needs the watchdog to reset the
// box, which it does not under a development kernel.
func needWatchdogReset(t *testing.T) {
	t.Helper()
	if os.Getenv(devKernelEnv) != "" {
		t.Skipf("%s: the watchdog does not reset the box", devKernelEnv)
	}
}

// testKernel is the kernel of the test images.
func testKernel(t *testing.T) []byte {
	t.Helper()
	p := os.Getenv(devKernelEnv)
	if p == "" {
		return kernel.BzImage()
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%s: %v", devKernelEnv, err)
	}
	release, err := kernel.KernelVersion(b)
	if err != nil {
		t.Fatalf("%s=%s: %v", devKernelEnv, p, err)
	}
	t.Logf("%s: kernel %s from %s; waits may stretch %.0f×", devKernelEnv, release, p, MaxPace)
	return b
}

// errStalled is a guest that stopped making progress while booting.
var errStalled = errors.New("stalled")

// waitBoot waits for /healthz like WaitHealthy, but gives up early, with
// errStalled, once the serial console has been silent for stall: in CI,
// with three guests in software emulation on two cores, a guest kernel
// was once seen to stop for good while probing PCI devices, less than a
// second into its boot, which no amount of waiting mends. A booting
// appliance writes to its console every few seconds.
func waitBoot(v *VM, serial string, timeout, stall time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stalled atomic.Bool
	go func() {
		size, last := int64(-1), time.Now()
		for {
			if fi, err := os.Stat(serial); err == nil && fi.Size() != size {
				size, last = fi.Size(), time.Now()
			} else if time.Since(last) > stall {
				stalled.Store(true)
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(2 * time.Second):
			}
		}
	}()
	took, err := WaitHealthy(ctx, v.StatusURL(), timeout)
	if err != nil && stalled.Load() {
		return 0, fmt.Errorf("%w: serial console silent for %v", errStalled, stall)
	}
	return took, err
}

// lastLine returns the last non-empty line of a file.
func lastLine(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// system reads /api/v1/system.
func system(t *testing.T, v *VM) *api.System {
	t.Helper()
	var s api.System
	getAPI(t, v, "api/v1/system", &s)
	return &s
}

// getAPI decodes statusd's JSON at path into out, on a fresh connection
// (the box may have rebooted since the last one) and with a few retries,
// since QEMU's user networking and a loaded host can drop a request now
// and then.
func getAPI(t *testing.T, v *VM, path string, out any) {
	t.Helper()
	readStatusd(t, v, path, out, 10*time.Second)
}

// readStatusd reads path through statusd's client, with the control
// password (the test images' unless v.Password says otherwise), which
// reading needs, each try within timeout, five tries at most.
func readStatusd(t *testing.T, v *VM, path string, out any, timeout time.Duration) {
	t.Helper()
	pw := v.Password
	if pw == "" {
		pw = testPassword
	}
	c := &api.Client{URL: v.StatusURL(), Password: pw, HTTP: v.Client(timeout)}
	var err error
	for try := 0; try < 5; try++ {
		if try > 0 {
			time.Sleep(2 * time.Second)
		}
		if err = c.Get(context.Background(), path, out); err == nil {
			return
		}
	}
	t.Fatalf("%s%s: %v", v.StatusURL(), path, err)
}

// readAPI GETs url with the control password, which reading needs on a
// box with status.auth_read.
func readAPI(c *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth("ncpos", testPassword)
	return c.Do(req)
}

func checkBooted(t *testing.T, v *VM) *api.System {
	t.Helper()
	// watchdogd may start a moment after statusd answers.
	var s *api.System
	for deadline := time.Now().Add(v.Within(60 * time.Second)); ; {
		s = system(t, v)
		if s.Watchdog.Petter != nil && s.Watchdog.Petter.Pings > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Second)
	}
	for deadline := time.Now().Add(v.Within(60 * time.Second)); ; {
		unhealthy := ""
		for _, d := range s.Daemons {
			if d.Configured && !d.Healthy {
				unhealthy += d.Name + ": " + d.Reason + "; "
			}
		}
		if unhealthy == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("daemons not healthy: %s", unhealthy)
			break
		}
		time.Sleep(2 * time.Second)
		s = system(t, v)
	}
	if s.Root.FSType != "squashfs" || !s.Root.ReadOnly() {
		t.Errorf("root is %s (%s), want read-only squashfs", s.Root.FSType, s.Root.Options)
	}
	if s.Perm == nil || s.Perm.FSType != "ext4" {
		t.Errorf("/perm = %+v, want ext4", s.Perm)
	}
	var holders []string
	for _, h := range s.Watchdog.Holders {
		holders = append(holders, h.Name)
	}
	if !strings.Contains(strings.Join(holders, ","), "watchdogd") {
		t.Errorf("watchdog holders %v, want watchdogd among them", holders)
	}
	if !strings.HasPrefix(s.Watchdog.GokrazyPinger, "stood down") {
		t.Errorf("gokrazy's pinger: %q, want it stood down", s.Watchdog.GokrazyPinger)
	}
	if p := s.Watchdog.Petter; p == nil || p.Pings == 0 || !strings.Contains(p.Identity, "6300") {
		t.Errorf("watchdogd reports %+v (error %q), want it petting the i6300ESB", p, s.Watchdog.Error)
	}
	if !strings.Contains(s.Cmdline, "root=PARTUUID=") {
		t.Errorf("cmdline %q lacks root=PARTUUID=", s.Cmdline)
	}
	checkProbe(t, v)
	return s
}

// checkProbe wants bypassd's boot probe on the API: the VM's i6300ESB and
// its virtio NICs, and no bypass hardware on a virtual machine.
func checkProbe(t *testing.T, v *VM) {
	t.Helper()
	var hw struct {
		Hardware *bypassapi.HardwareProbe `json:"hardware"`
	}
	getAPI(t, v, "api/v1/hardware", &hw)
	p := hw.Hardware
	if p == nil {
		t.Error("no hardware probe on /api/v1/hardware")
		return
	}
	virtio := 0
	for _, n := range p.NICs {
		if strings.HasPrefix(n.ID, "1af4:") {
			virtio++
		}
		if n.Bypass != "" {
			t.Errorf("bypass hardware on a VM: %+v", n)
		}
	}
	found := slices.ContainsFunc(p.Fits, func(f bypassapi.ProfileFit) bool { return f.Found })
	if virtio == 0 || !slices.ContainsFunc(p.Watchdogs, func(w bypassapi.ProbedWatchdog) bool { return strings.Contains(w.Identity, "6300") }) || found {
		t.Errorf("probe %+v", p)
	}
	t.Logf("probe: %d NICs (%d virtio), Super I/O %+v, SMBus %+v, watchdogs %+v, errors %q", len(p.NICs), virtio, p.SuperIO, p.SMBus, p.Watchdogs, p.Errors)
}

func TestBootLegacyBIOS(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	v, serial := boot(t, testImage(t, "default", nil), false)
	s := checkBooted(t, v)
	t.Logf("build %s, kernel %s, holders %+v", s.BuildID, s.Kernel, s.Watchdog.Holders)
	// The probe's summary is in the boot log on the serial console.
	if b, _ := os.ReadFile(serial); !strings.Contains(string(b), "ncpos: probe: watchdog /dev/watchdog") {
		t.Errorf("the serial console has no probe summary")
	}

	// CF cards wear out: an idle appliance must not write to its boot disk.
	// Let boot settle (its first-boot writes, later on a slow guest),
	// then measure two idle minutes, while other tests' guests run.
	idleGuests(t)
	settle := v.Within(60*time.Second) - time.Duration(s.UptimeSeconds*float64(time.Second))
	if settle > 0 {
		time.Sleep(settle)
	}
	before := system(t, v)
	if before.BootDisk == nil {
		t.Fatalf("no boot disk counters: %v", before.Errors)
	}
	time.Sleep(2 * time.Minute)
	after := system(t, v)
	written := after.BootDisk.BytesWritten - before.BootDisk.BytesWritten
	t.Logf("boot disk %s: %d bytes written in two idle minutes (%d since boot)", after.BootDisk.Disk, written, after.BootDisk.BytesWritten)
	if written >= 64*1024 {
		t.Errorf("%d bytes written to the boot disk in two idle minutes, want < 64 KiB", written)
	}
}

func TestBootUEFI(t *testing.T) {
	requireQEMU(t)
	t.Parallel()
	v, _ := boot(t, testImage(t, "default", nil), true)
	checkBooted(t, v)
}
