package install

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"golang.org/x/sys/unix"
)

// Disk is one whole disk under /sys/block, as `ncpos install` lists it.
type Disk struct {
	Name       string   // kernel name: sda, mmcblk0, loop3
	Path       string   // /dev/<name>
	Model      string   // vendor and model as the device reports them
	Size       int64    // bytes
	Removable  bool     // the kernel's removable flag (most USB sticks set it)
	ReadOnly   bool     // e.g. an SD card's write-protect switch
	Transport  string   // usb, ata, nvme, mmc, virtio, scsi, loop, …
	Partitions []string // kernel names of its partitions
	System     bool     // holds the file system the running system booted from
	Busy       []string // why it is in use: mounts, holders, swap
}

// Eligible says whether the disk may be written at all (its size still has
// to fit the image).
func (d *Disk) Eligible() bool { return len(d.refusals()) == 0 }

// refusals lists every reason not to write the disk, worst first.
func (d *Disk) refusals() []string {
	var r []string
	if d.System {
		r = append(r, fmt.Sprintf("it holds the running system (/ is on %s)", d.Name))
	}
	r = append(r, d.Busy...)
	if d.ReadOnly {
		r = append(r, "it is read-only (write-protect switch?)")
	}
	if d.Size == 0 {
		r = append(r, "it has no medium (size 0)")
	}
	return r
}

// host is where the checks look: a root holding sys/, proc/ and dev/ ("/"
// normally, a fake tree in tests) and a way to learn the device number of
// the running system's root file system.
type host struct {
	root    string
	rootDev func() (uint64, error)
}

func newHost(root string) host {
	if root == "" {
		root = "/"
	}
	return host{root: root, rootDev: func() (uint64, error) {
		var st unix.Stat_t
		if err := unix.Stat(root, &st); err != nil {
			return 0, fmt.Errorf("stat %s: %w", root, err)
		}
		return st.Dev, nil
	}}
}

func (h host) path(elem ...string) string {
	return filepath.Join(append([]string{h.root}, elem...)...)
}

// readSys reads a one-line sysfs attribute, "" when it is missing.
func (h host) readSys(elem ...string) string {
	b, err := os.ReadFile(h.path(elem...))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// ListDisks lists the whole disks under root/sys/block that one could
// install onto, each marked with why it is not eligible, if it is not.
// Virtual devices (ram, zram, device-mapper, md) are left out, except
// attached loop devices, which are what the tests install onto.
func ListDisks(root string) ([]Disk, error) {
	return newHost(root).listDisks()
}

func (h host) listDisks() ([]Disk, error) {
	ents, err := os.ReadDir(h.path("sys/block"))
	if err != nil {
		return nil, fmt.Errorf("listing disks: %w", err)
	}
	sys := h.systemDisks()
	var disks []Disk
	for _, e := range ents {
		name := e.Name()
		real, err := filepath.EvalSymlinks(h.path("sys/block", name))
		if err != nil {
			continue
		}
		if strings.Contains(real, "/devices/virtual/") && !strings.HasPrefix(name, "loop") {
			continue
		}
		d, err := h.disk(name, sys)
		if err != nil {
			return nil, err
		}
		if d.Size == 0 {
			continue // detached loop device, empty card reader slot, CD drive without disc
		}
		disks = append(disks, *d)
	}
	sort.Slice(disks, func(i, j int) bool { return disks[i].Name < disks[j].Name })
	return disks, nil
}

// disk reads everything about one whole disk, including whether it is the
// system disk (sys is systemDisks' answer) and what keeps it busy.
func (h host) disk(name string, sys map[string]bool) (*Disk, error) {
	dir := h.path("sys/block", name)
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("disk %s: %w", name, err)
	}
	sectors, _ := strconv.ParseInt(h.readSys("sys/block", name, "size"), 10, 64)
	d := &Disk{
		Name:      name,
		Path:      "/dev/" + name,
		Size:      sectors * 512, // sysfs counts 512-byte sectors whatever the device's block size
		Removable: h.readSys("sys/block", name, "removable") == "1",
		ReadOnly:  h.readSys("sys/block", name, "ro") == "1",
		System:    sys[name],
	}
	d.Partitions = h.partitions(name)
	d.Transport = h.transport(name)
	d.Model = h.model(name)
	d.Busy = h.busy(name, d.Partitions)
	return d, nil
}

// partitions lists the partitions of disk: the subdirectories of its sysfs
// directory that have a "partition" attribute.
func (h host) partitions(disk string) []string {
	ents, err := os.ReadDir(h.path("sys/block", disk))
	if err != nil {
		return nil
	}
	var parts []string
	for _, e := range ents {
		if _, err := os.Stat(h.path("sys/block", disk, e.Name(), "partition")); err == nil {
			parts = append(parts, e.Name())
		}
	}
	return parts
}

// transport says how the disk is attached, from where the kernel put it in
// the device tree: a USB card reader shows up as SCSI below a USB port, a CF
// card on an IDE adapter or a DOM below an ATA port.
func (h host) transport(name string) string {
	real, err := filepath.EvalSymlinks(h.path("sys/block", name))
	if err != nil {
		return "unknown"
	}
	has := func(prefix string) bool {
		for _, c := range strings.Split(real, "/") {
			if strings.HasPrefix(c, prefix) {
				return true
			}
		}
		return false
	}
	switch {
	case has("usb"):
		return "usb"
	case strings.HasPrefix(name, "loop"):
		return "loop"
	case strings.HasPrefix(name, "nvme"):
		return "nvme"
	case strings.HasPrefix(name, "mmcblk") || has("mmc_host"):
		return "mmc"
	case has("virtio"):
		return "virtio"
	case has("ata"):
		return "ata"
	case strings.HasPrefix(name, "xvd"):
		return "xen"
	case has("target"):
		return "scsi"
	}
	return "unknown"
}

// model names the device the way it names itself; for a loop device, its
// backing file.
func (h host) model(name string) string {
	if f := h.readSys("sys/block", name, "loop/backing_file"); f != "" {
		return "loop: " + f
	}
	var parts []string
	for _, attr := range []string{"device/vendor", "device/model", "device/name"} {
		// libata reports the vendor "ATA"; virtio a PCI vendor ID.
		if v := h.readSys("sys/block", name, attr); v != "" && !strings.EqualFold(v, "ATA") && !strings.HasPrefix(v, "0x") {
			parts = append(parts, strings.Join(strings.Fields(v), " "))
		}
	}
	return strings.Join(parts, " ")
}

// PrintDisks writes the disk list as a table, each disk that cannot be
// written with the reasons why.
func PrintDisks(w io.Writer, disks []Disk) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE\tSIZE\tTRANSPORT\tREMOVABLE\tMODEL\tELIGIBLE")
	for i := range disks {
		d := &disks[i]
		rem := "no"
		if d.Removable {
			rem = "yes"
		}
		model := d.Model
		if model == "" {
			model = "-"
		}
		elig := "yes"
		if r := d.refusals(); len(r) > 0 {
			elig = "no: " + strings.Join(r, "; ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", d.Path, human(d.Size), d.Transport, rem, model, elig)
	}
	return tw.Flush()
}
