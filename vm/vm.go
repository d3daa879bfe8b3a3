// Package vm boots an ncpos image in QEMU the way a box would run it: two
// CPUs, an IDE disk (CF cards and DOMs are IDE/PATA devices), a management
// NIC on user networking with the status page and gokrazy's update port
// forwarded to localhost, data NICs at the PCI addresses of the qemu
// platform profile, the i6300esb watchdog, and the serial console. Without
// KVM it runs in software emulation.
package vm

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ncpos/ncpos/boxtls"
)

// Firmware files from Debian's ovmf package.
const (
	ovmfCode = "/usr/share/OVMF/OVMF_CODE_4M.fd"
	ovmfVars = "/usr/share/OVMF/OVMF_VARS_4M.fd"
)

// Wire is one data port's cable to the host: two UDP ports on loopback.
type Wire struct{ Host, Guest int }

// MgmtMAC is the management port's MAC address (QEMU's default one).
var MgmtMAC = net.HardwareAddr{0x52, 0x54, 0x00, 0x12, 0x34, 0x56}

// WireMAC is the MAC address of the wired data port LANi.
func WireMAC(i int) net.HardwareAddr { return net.HardwareAddr{0x52, 0x54, 0x00, 0x6e, 0x00, byte(i)} }

// Cable joins two data ports of the VM, LANa and LANb (numbered from 1),
// as a patch cable between two of a box's ports would: what one sends
// enters the other. The self-test's test ports are cabled this way to the
// segment ports they measure.
type Cable struct{ A, B int }

// String is "LAN3=LAN1".
func (c Cable) String() string { return fmt.Sprintf("LAN%d=LAN%d", c.A, c.B) }

// Options configures a VM.
type Options struct {
	Image    string
	UEFI     bool // OVMF instead of SeaBIOS (legacy BIOS)
	CPUs     int
	MemoryMB int
	DataNICs int // LAN1..LANn at PCI slots 4.. (qemu profile)
	// WatchdogAction is what QEMU does when the i6300esb fires: "reset"
	// (the default, as the box's hardware does) or, for a guest too slow
	// to start its watchdog daemon within the device's first timeout,
	// "none".
	WatchdogAction string
	// DataModels are the QEMU devices of LAN1.. in order ("e1000e" is
	// the Intel 82574L, "igb" the 82576); virtio-net-pci for those not
	// given.
	DataModels []string
	// DataAddrs place LAN1.. in order at these PCI slots and functions
	// ("04.1"), as a profile other than qemu's names them; slot 3+i for
	// those not given. A slot with several functions is made
	// multifunction.
	DataAddrs []string
	// Wires cable LAN1.. in order to UDP on loopback instead of a
	// user-mode backend that reaches nothing: the frames LANi sends go to
	// 127.0.0.1:Wires[i-1].Host, and what is sent to
	// 127.0.0.1:Wires[i-1].Guest enters LANi, one frame per datagram.
	Wires []Wire
	// MgmtWire cables the management port to UDP on loopback as Wires
	// do, instead of QEMU's user-mode network: StatusPort, HTTPPort,
	// Forwards and UDPForwards then reach nothing but what the test
	// forwards itself.
	MgmtWire *Wire
	// Cables join data ports pairwise (unix datagram sockets in the VM's
	// folder); a port may be in one cable and not also wired.
	Cables     []Cable
	StatusPort int         // host port forwarded to the guest's statusd over HTTPS (443)
	HTTPPort   int         // host port forwarded to the guest's plain HTTP (80), which only redirects; 0 = none
	Forwards   map[int]int // more host port -> guest port forwards (tests)
	// UDPForwards are host UDP port -> guest UDP port forwards on
	// 127.0.0.1 (the SNMP agent); what the guest sends to 10.0.2.2 reaches
	// the host's loopback without one (traps, syslog).
	UDPForwards map[int]int
	ExtraDisks  []string // more raw disks (IDE), e.g. an internal CF card
	SerialLog   string   // file for the serial console; "" = this terminal
	// SerialSocket, with SerialLog, is a unix socket that stands for the
	// serial port's cable: a test types into the box's console there.
	SerialSocket string
	Snapshot     bool   // discard disk writes when QEMU exits
	StateDir     string // where UEFI variables are kept; "" = a temporary folder
	// RTCBase is the time the board's clock starts at (zero: the host's),
	// as a board whose battery died keeps some date of long ago.
	RTCBase time.Time

	sockDir string // where the cables' sockets are (Start's folder)
}

// CheckCables refuses cables that join a port to itself, name a port the
// VM does not have, or use a port twice or a wired port.
func (o Options) CheckCables() error {
	used := map[int]string{}
	for i := range o.Wires {
		used[i+1] = "wired to the host"
	}
	for _, c := range o.Cables {
		if c.A == c.B {
			return fmt.Errorf("cable %s joins LAN%d to itself", c, c.A)
		}
		for _, p := range []int{c.A, c.B} {
			if p < 1 || p > o.DataNICs {
				return fmt.Errorf("cable %s: LAN%d is not a data port of the VM (LAN1 to LAN%d)", c, p, o.DataNICs)
			}
			if u := used[p]; u != "" {
				return fmt.Errorf("cable %s: LAN%d is already %s", c, p, u)
			}
			used[p] = "in cable " + c.String()
		}
	}
	return nil
}

// ParseCables reads "LAN3=LAN1,LAN4=LAN2".
func ParseCables(s string) ([]Cable, error) {
	var out []Cable
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		a, b, ok := strings.Cut(part, "=")
		ia, erra := lanIndex(a)
		ib, errb := lanIndex(b)
		if !ok || erra != nil || errb != nil {
			return nil, fmt.Errorf("cable %q: want two data ports joined by =, e.g. LAN3=LAN1", part)
		}
		out = append(out, Cable{ia, ib})
	}
	return out, nil
}

func lanIndex(s string) (int, error) {
	n, ok := strings.CutPrefix(strings.TrimSpace(s), "LAN")
	if !ok {
		return 0, fmt.Errorf("%q is not a data port LANn", s)
	}
	return strconv.Atoi(n)
}

// cableEnd is the netdev of port's end of the cable it is in, or "".
func (o Options) cableEnd(port int) string {
	for k, c := range o.Cables {
		var local, remote string
		switch port {
		case c.A:
			local, remote = "a", "b"
		case c.B:
			local, remote = "b", "a"
		default:
			continue
		}
		path := func(end string) string { return filepath.Join(o.sockDir, fmt.Sprintf("cable%d%s.sock", k, end)) }
		return fmt.Sprintf("dgram,id=lan%d,local.type=unix,local.path=%s,remote.type=unix,remote.path=%s", port, path(local), path(remote))
	}
	return ""
}

func (o *Options) defaults() {
	if o.CPUs == 0 {
		o.CPUs = 2
	}
	if o.MemoryMB == 0 {
		o.MemoryMB = 512
	}
}

// Args returns QEMU's command line for o (without the binary).
func Args(o Options, varsFile string) []string {
	o.defaults()
	snapshot := ""
	if o.Snapshot {
		// Only the boot disk: extra disks are targets whose writes count.
		snapshot = ",snapshot=on"
	}
	args := []string{
		// -nodefaults drops QEMU's CD-ROM and default NIC; the VGA card
		// is added back for the VGA console.
		"-nodefaults", "-vga", "std",
		"-machine", "pc",
		// One thread for all virtual CPUs. With a thread per CPU
		// (QEMU 7.2's default), a CPU now and then ran code another had
		// just patched as it was before the patch: the guest kernel
		// oopsed on a stale int3 from its own live patching
		// ("Oops: int3" in sched_clock_cpu, once in about 90 boots on a
		// loaded host). Twice in CI a guest also stopped for good while
		// probing PCI devices, which we take for the same race. Under
		// load it boots no slower this way.
		"-accel", "tcg,thread=single",
		"-smp", strconv.Itoa(o.CPUs),
		"-m", strconv.Itoa(o.MemoryMB),
		"-drive", "file=" + o.Image + ",format=raw,if=ide,index=0,media=disk" + snapshot,
		"-display", "none",
		"-device", "i6300esb,id=watchdog,addr=0x10",
		"-action", "watchdog=" + cmp.Or(o.WatchdogAction, "reset"),
	}
	if !o.RTCBase.IsZero() {
		args = append(args, "-rtc", "base="+o.RTCBase.UTC().Format("2006-01-02T15:04:05"))
	}
	for i, d := range o.ExtraDisks {
		args = append(args, "-drive", fmt.Sprintf("file=%s,format=raw,if=ide,index=%d,media=disk", d, i+1))
	}
	fwd := fmt.Sprintf("user,id=mgmt,hostfwd=tcp:127.0.0.1:%d-:443", o.StatusPort)
	if o.HTTPPort != 0 {
		fwd += fmt.Sprintf(",hostfwd=tcp:127.0.0.1:%d-:80", o.HTTPPort)
	}
	hosts := make([]int, 0, len(o.Forwards))
	for h := range o.Forwards {
		hosts = append(hosts, h)
	}
	sort.Ints(hosts)
	for _, h := range hosts {
		fwd += fmt.Sprintf(",hostfwd=tcp:127.0.0.1:%d-:%d", h, o.Forwards[h])
	}
	hosts = hosts[:0]
	for h := range o.UDPForwards {
		hosts = append(hosts, h)
	}
	sort.Ints(hosts)
	for _, h := range hosts {
		fwd += fmt.Sprintf(",hostfwd=udp:127.0.0.1:%d-:%d", h, o.UDPForwards[h])
	}
	if w := o.MgmtWire; w != nil {
		// The management port on a cable of the test's own, in place of
		// QEMU's user-mode network and its forwards.
		fwd = fmt.Sprintf("dgram,id=mgmt,remote.type=inet,remote.host=127.0.0.1,remote.port=%d,local.type=inet,local.host=127.0.0.1,local.port=%d", w.Host, w.Guest)
	}
	args = append(args, "-netdev", fwd, "-device", "virtio-net-pci,netdev=mgmt,addr=0x3,mac="+MgmtMAC.String())
	for i := 1; i <= o.DataNICs; i++ {
		// Data ports carry no address; restrict=on keeps the user-mode
		// backend from reaching anything.
		netdev := fmt.Sprintf("user,id=lan%d,restrict=on", i)
		if i <= len(o.Wires) {
			w := o.Wires[i-1]
			netdev = fmt.Sprintf("dgram,id=lan%d,remote.type=inet,remote.host=127.0.0.1,remote.port=%d,local.type=inet,local.host=127.0.0.1,local.port=%d", i, w.Host, w.Guest)
		}
		if c := o.cableEnd(i); c != "" {
			netdev = c
		}
		model := "virtio-net-pci"
		if i <= len(o.DataModels) && o.DataModels[i-1] != "" {
			model = o.DataModels[i-1]
		}
		dev := fmt.Sprintf("%s,netdev=lan%d,addr=%s", model, i, o.dataAddr(i))
		if slot, fn, err := pciSlot(o.dataAddr(i)); err == nil && fn == 0 && o.sharedSlot(slot) {
			dev += ",multifunction=on"
		}
		if i <= len(o.Wires) {
			dev += ",mac=" + WireMAC(i).String()
		}
		args = append(args, "-netdev", netdev, "-device", dev)
	}
	if o.UEFI {
		args = append(args,
			"-drive", "if=pflash,format=raw,unit=0,readonly=on,file="+ovmfCode,
			"-drive", "if=pflash,format=raw,unit=1,file="+varsFile)
	}
	switch {
	case o.SerialSocket != "" && o.SerialLog != "":
		// A technician's console cable: what is typed into the socket
		// reaches the serial port, and the log keeps what it printed.
		args = append(args, "-chardev", "socket,id=ser0,path="+o.SerialSocket+",server=on,wait=off,logfile="+o.SerialLog,
			"-serial", "chardev:ser0", "-monitor", "none")
	case o.SerialLog != "":
		args = append(args, "-serial", "file:"+o.SerialLog, "-monitor", "none")
	default:
		args = append(args, "-serial", "mon:stdio")
	}
	return args
}

// dataAddr is LANi's PCI address in QEMU's terms.
func (o *Options) dataAddr(i int) string {
	if i <= len(o.DataAddrs) && o.DataAddrs[i-1] != "" {
		return o.DataAddrs[i-1]
	}
	return fmt.Sprintf("0x%x", 3+i)
}

// pciSlot reads a PCI address as QEMU takes it ("0x5", "04.1"): slot and
// function, in hex.
func pciSlot(addr string) (slot, fn uint64, err error) {
	s, f, _ := strings.Cut(addr, ".")
	if slot, err = strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 5); err != nil {
		return 0, 0, fmt.Errorf("PCI address %q: slot: %w", addr, err)
	}
	if f != "" {
		if fn, err = strconv.ParseUint(f, 16, 3); err != nil {
			return 0, 0, fmt.Errorf("PCI address %q: function: %w", addr, err)
		}
	}
	return slot, fn, nil
}

// sharedSlot says whether more than one data port sits in slot.
func (o *Options) sharedSlot(slot uint64) bool {
	n := 0
	for i := 1; i <= o.DataNICs; i++ {
		if s, _, err := pciSlot(o.dataAddr(i)); err == nil && s == slot {
			n++
		}
	}
	return n > 1
}

// checkAddrs wants every data port's address readable, and a data port at
// function 0 of each slot that several share: QEMU shows the others only
// behind a multifunction function 0.
func (o *Options) checkAddrs() error {
	zero := map[uint64]bool{}
	for i := 1; i <= o.DataNICs; i++ {
		slot, fn, err := pciSlot(o.dataAddr(i))
		if err != nil {
			return fmt.Errorf("LAN%d: %w", i, err)
		}
		zero[slot] = zero[slot] || fn == 0
	}
	for i := 1; i <= o.DataNICs; i++ {
		if slot, _, _ := pciSlot(o.dataAddr(i)); o.sharedSlot(slot) && !zero[slot] {
			return fmt.Errorf("LAN%d: slot %#x has several data ports and none at function 0", i, slot)
		}
	}
	return nil
}

// VM is a running QEMU.
type VM struct {
	Cmd     *exec.Cmd
	Options Options
	tmp     string
	events  events

	firstHealthz time.Duration // the first boot's time to /healthz (SetFirstBoot)

	// Password is the control password the boot tests read the box with
	// when it is not their images' (a card with a /perm of its own).
	Password string
}

// Start launches QEMU. Stop it with Kill; it also dies with ctx.
func Start(ctx context.Context, o Options, stdout io.Writer) (*VM, error) {
	o.defaults()
	if _, err := os.Stat(o.Image); err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		return nil, fmt.Errorf("qemu-system-x86_64 not found: apt-get install qemu-system-x86 ovmf")
	}
	if err := o.CheckCables(); err != nil {
		return nil, err
	}
	if err := o.checkAddrs(); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "ncpos-vm-")
	if err != nil {
		return nil, err
	}
	o.sockDir = tmp
	v := &VM{Options: o, tmp: tmp}
	varsFile := ""
	if o.UEFI {
		dir := o.StateDir
		if dir == "" {
			dir = tmp
		}
		varsFile = filepath.Join(dir, "OVMF_VARS.fd")
		if _, err := os.Stat(varsFile); err != nil {
			b, err := os.ReadFile(ovmfVars)
			if err != nil {
				return nil, fmt.Errorf("UEFI firmware: %w (apt-get install ovmf)", err)
			}
			if err := os.WriteFile(varsFile, b, 0o644); err != nil {
				return nil, err
			}
		}
	}
	qmp := filepath.Join(tmp, "qmp.sock")
	args := append(Args(o, varsFile), "-qmp", "unix:"+qmp+",server=on,wait=off")
	v.Cmd = exec.CommandContext(ctx, "qemu-system-x86_64", args...)
	v.Cmd.Stdout, v.Cmd.Stderr = stdout, stdout
	// The kernel kills QEMU when the process that started it dies, even
	// by SIGKILL or a test binary's timeout panic: a guest left behind
	// would hold its ports, disk and CPU, and nobody would stop it.
	v.Cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if o.SerialLog == "" {
		v.Cmd.Stdin = os.Stdin
	}
	if err := v.Cmd.Start(); err != nil {
		v.cleanup()
		return nil, fmt.Errorf("starting qemu: %w", err)
	}
	if err := v.events.followQMP(qmp); err != nil {
		v.Kill()
		return nil, err
	}
	return v, nil
}

// Wait waits for QEMU to exit.
func (v *VM) Wait() error {
	defer v.cleanup()
	return v.Cmd.Wait()
}

// Kill stops QEMU and waits for it.
func (v *VM) Kill() {
	if v.Cmd.Process != nil {
		v.Cmd.Process.Kill()
	}
	v.Wait()
}

func (v *VM) cleanup() {
	if v.tmp != "" {
		os.RemoveAll(v.tmp)
		v.tmp = ""
	}
}

// StatusURL is the forwarded status page.
func (v *VM) StatusURL() string {
	return fmt.Sprintf("https://127.0.0.1:%d/", v.Options.StatusPort)
}

// keyLine is statusd's announcement of the box's TLS key on the console.
var keyLine = regexp.MustCompile(`ncpos: statusd: TLS key (sha256:[0-9a-f]{64})`)

// Fingerprint is the box's TLS key as statusd last announced it on the
// serial console, as an operator at the console would read it.
func (v *VM) Fingerprint() (string, error) {
	if v.Options.SerialLog == "" {
		return "", errors.New("the VM's serial console goes to the terminal, not to a file")
	}
	b, err := os.ReadFile(v.Options.SerialLog)
	if err != nil {
		return "", err
	}
	m := keyLine.FindAllSubmatch(b, -1)
	if m == nil {
		return "", fmt.Errorf("no TLS key on the serial console (%s) yet", v.Options.SerialLog)
	}
	return string(m[len(m)-1][1]), nil
}

// Client is an HTTP client for the box's statusd that trusts only the key
// on its serial console, read at each connection (a reinstalled box has a
// new one). No keep-alive: the box reboots under some tests. Its timeout
// is scaled by the guest's pace.
func (v *VM) Client(timeout time.Duration) *http.Client {
	timeout = v.Within(timeout)
	cfg := &tls.Config{InsecureSkipVerify: true, VerifyConnection: func(cs tls.ConnectionState) error {
		return v.CheckKey(cs.PeerCertificates[0].Raw)
	}}
	return &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
}

// CheckKey says whether a certificate the box presented carries the key
// its serial console announced.
func (v *VM) CheckKey(certDER []byte) error {
	want, err := v.Fingerprint()
	if err != nil {
		return err
	}
	got, err := boxtls.Fingerprint(certDER)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("the box presented the key %s, its console announced %s", got, want)
	}
	return nil
}

// WaitHealthy polls the forwarded /healthz until it answers 200 and returns
// how long that took, or an error when timeout passes or QEMU exits. It
// does not check the box's key: it only asks whether statusd is up.
func WaitHealthy(ctx context.Context, base string, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}}
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"healthz", nil)
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start), nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%shealthz did not answer within %v", base, timeout)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// FreePort asks the kernel for an unused localhost TCP port that this
// process has not handed out before. The port is free only until someone
// binds it: tests that start several VMs in parallel ask for a port each
// for every forward, and the kernel gladly returns a port just closed
// again, which made QEMU fail to set up a second forward on the same port.
func FreePort() (int, error) { return freePort("tcp") }

// FreeUDPPort is FreePort for a UDP port (an SNMP forward).
func FreeUDPPort() (int, error) { return freePort("udp") }

func freePort(network string) (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 100 {
		var port int
		if network == "udp" {
			pc, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				return 0, err
			}
			port = pc.LocalAddr().(*net.UDPAddr).Port
			pc.Close()
		} else {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return 0, err
			}
			port = ln.Addr().(*net.TCPAddr).Port
			ln.Close()
		}
		key := network + "/" + strconv.Itoa(port)
		if !handedOut.ports[key] {
			handedOut.ports[key] = true
			return port, nil
		}
	}
	return 0, fmt.Errorf("no localhost %s port left that was not handed out already", network)
}

var handedOut = struct {
	sync.Mutex
	ports map[string]bool // "tcp/port", "udp/port"
}{ports: map[string]bool{}}
