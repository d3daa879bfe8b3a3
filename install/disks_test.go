package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeTree builds a /sys and /proc tree the way the kernel lays them out:
// /sys/block/X and /sys/dev/block/M:m are symlinks into /sys/devices, whose
// path tells the transport.
type fakeTree struct {
	t    *testing.T
	root string
}

func (f fakeTree) write(path, content string) {
	f.t.Helper()
	p := filepath.Join(f.root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f fakeTree) mkdir(path string) {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Join(f.root, path), 0o755); err != nil {
		f.t.Fatal(err)
	}
}

func (f fakeTree) link(path, target string) {
	f.t.Helper()
	p := filepath.Join(f.root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(f.root, target), p); err != nil {
		f.t.Fatal(err)
	}
}

// disk adds a whole disk below devPath (a /sys/devices path ending in
// block/NAME) with partitions, and its /sys/block and /sys/dev/block links.
func (f fakeTree) disk(devPath, devnum string, sectors string, removable, ro bool, attrs map[string]string, parts map[string]string) {
	name := filepath.Base(devPath)
	f.write(devPath+"/size", sectors)
	f.write(devPath+"/removable", map[bool]string{true: "1", false: "0"}[removable])
	f.write(devPath+"/ro", map[bool]string{true: "1", false: "0"}[ro])
	f.mkdir(devPath + "/holders")
	f.mkdir(devPath + "/slaves")
	for k, v := range attrs {
		f.write(devPath+"/"+k, v)
	}
	f.link("sys/block/"+name, devPath)
	f.link("sys/dev/block/"+devnum, devPath)
	for p, num := range parts {
		f.write(devPath+"/"+p+"/partition", "1")
		f.mkdir(devPath + "/" + p + "/holders")
		f.link("sys/dev/block/"+num, devPath+"/"+p)
	}
}

// newFakeTree is a machine with a SATA system disk (root on sda2), a USB
// stick that is free, a USB disk whose partition is a dm-crypt mounted via
// /dev/mapper, a CF card on an IDE adapter with a swap partition, a
// write-protected SD card, an NVMe disk with a mounted partition, a free
// virtio disk, an attached and a detached loop device, a zram device, and
// an md RAID over two more disks.
func newFakeTree(t *testing.T) fakeTree {
	f := fakeTree{t, t.TempDir()}
	const pci = "sys/devices/pci0000:00/"
	f.disk(pci+"0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda", "8:0", "500118192", false, false,
		map[string]string{"device/vendor": "ATA", "device/model": "Samsung SSD 860"},
		map[string]string{"sda1": "8:1", "sda2": "8:2"})
	f.disk(pci+"0000:00:14.0/usb2/2-1/2-1:1.0/host6/target6:0:0/6:0:0:0/block/sdb", "8:16", "7821312", true, false,
		map[string]string{"device/vendor": "SanDisk ", "device/model": "Cruzer  Blade"},
		map[string]string{"sdb1": "8:17"})
	f.disk(pci+"0000:00:14.0/usb2/2-2/2-2:1.0/host7/target7:0:0/7:0:0:0/block/sdc", "8:32", "1953525168", false, false,
		map[string]string{"device/vendor": "WD", "device/model": "My Passport"},
		map[string]string{"sdc1": "8:33"})
	f.disk(pci+"0000:00:1f.1/ata2/host1/target1:0:0/1:0:0:0/block/sdd", "8:48", "1000944", true, false,
		map[string]string{"device/vendor": "ATA", "device/model": "TS512MCF80"},
		map[string]string{"sdd1": "8:49", "sdd2": "8:50"})
	f.disk("sys/devices/platform/soc/mmc_host/mmc0/mmc0:0001/block/mmcblk0", "179:0", "31116288", false, true,
		map[string]string{"device/name": "SD16G"}, map[string]string{"mmcblk0p1": "179:1"})
	f.disk(pci+"0000:00:1d.0/0000:3d:00.0/nvme/nvme0/nvme0n1", "259:0", "1000215216", false, false,
		map[string]string{"device/model": "WDC PC SN730"}, map[string]string{"nvme0n1p1": "259:1"})
	f.disk(pci+"0000:00:04.0/virtio1/block/vda", "254:0", "1048576", false, false,
		map[string]string{"device/vendor": "0x1af4"}, nil)
	f.disk("sys/devices/virtual/block/loop0", "7:0", "0", false, false, nil, nil)
	f.disk("sys/devices/virtual/block/loop1", "7:1", "131072", false, false,
		map[string]string{"loop/backing_file": "/tmp/test.img"}, nil)
	f.disk("sys/devices/virtual/block/zram0", "253:0", "8388608", false, false, nil, nil)
	// dm-0 (cryptdata) holds sdc1.
	f.disk("sys/devices/virtual/block/dm-0", "252:0", "1953523120", false, false,
		map[string]string{"dm/name": "cryptdata"}, nil)
	f.mkdir(pci + "0000:00:14.0/usb2/2-2/2-2:1.0/host7/target7:0:0/7:0:0:0/block/sdc/sdc1/holders/dm-0")
	// md0 over sde1 and sdf1.
	for _, d := range []struct{ name, num, part string }{{"sde", "8:64", "8:65"}, {"sdf", "8:80", "8:81"}} {
		f.disk(pci+"0000:00:17.0/ata3/host2/target2:0:0/2:0:0:0/block/"+d.name, d.num, "2000000", false, false,
			map[string]string{"device/vendor": "ATA", "device/model": "DOM"},
			map[string]string{d.name + "1": d.part})
		f.mkdir(pci + "0000:00:17.0/ata3/host2/target2:0:0/2:0:0:0/block/" + d.name + "/" + d.name + "1/holders/md0")
		f.mkdir("sys/devices/virtual/block/md0/slaves/" + d.name + "1")
	}
	f.disk("sys/devices/virtual/block/md0", "9:0", "1999000", false, false, nil, nil)

	f.write("proc/mounts", strings.Join([]string{
		"/dev/sda2 / ext4 rw,relatime 0 0",
		"proc /proc proc rw 0 0",
		"/dev/mapper/cryptdata /data ext4 rw 0 0",
		`/dev/nvme0n1p1 /boot/my\040efi vfat rw 0 0`,
		"tmpfs /run tmpfs rw 0 0",
	}, "\n"))
	f.write("proc/swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"+
		"/dev/sdd2                               partition\t1000\t\t0\t\t-2\n"+
		"/swapfile                               file\t\t1000\t\t0\t\t-3")
	return f
}

func (f fakeTree) host(major, minor uint32) host {
	return host{root: f.root, rootDev: func() (uint64, error) { return unix.Mkdev(major, minor), nil }}
}

func TestListDisksFakeTree(t *testing.T) {
	f := newFakeTree(t)
	disks, err := f.host(8, 2).listDisks()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Disk{}
	var names []string
	for _, d := range disks {
		byName[d.Name] = d
		names = append(names, d.Name)
	}
	if got, want := strings.Join(names, " "), "loop1 mmcblk0 nvme0n1 sda sdb sdc sdd sde sdf vda"; got != want {
		t.Fatalf("disks %q, want %q (no zram, dm, md or detached loop)", got, want)
	}
	for _, c := range []struct {
		name, transport, model string
		size                   int64
		removable, eligible    bool
		why                    []string
	}{
		{"sda", "ata", "Samsung SSD 860", 500118192 * 512, false, false,
			[]string{"it holds the running system (/ is on sda)", "partition sda2 is mounted on /"}},
		{"sdb", "usb", "SanDisk Cruzer Blade", 7821312 * 512, true, true, nil},
		{"sdc", "usb", "WD My Passport", 1953525168 * 512, false, false,
			[]string{"sdc1 is in use by dm-0 (cryptdata)", "dm-0 (cryptdata), holding sdc1, is mounted on /data"}},
		{"sdd", "ata", "TS512MCF80", 1000944 * 512, true, false, []string{"partition sdd2 is in use as swap"}},
		{"mmcblk0", "mmc", "SD16G", 31116288 * 512, false, false, []string{"it is read-only (write-protect switch?)"}},
		{"nvme0n1", "nvme", "WDC PC SN730", 1000215216 * 512, false, false,
			[]string{"partition nvme0n1p1 is mounted on /boot/my efi"}},
		{"vda", "virtio", "", 1048576 * 512, false, true, nil},
		{"loop1", "loop", "loop: /tmp/test.img", 131072 * 512, false, true, nil},
		{"sde", "ata", "DOM", 2000000 * 512, false, false, []string{"sde1 is in use by md0"}},
	} {
		d := byName[c.name]
		if d.Transport != c.transport || d.Model != c.model || d.Size != c.size || d.Removable != c.removable {
			t.Errorf("%s: got transport %q model %q size %d removable %v, want %q %q %d %v",
				c.name, d.Transport, d.Model, d.Size, d.Removable, c.transport, c.model, c.size, c.removable)
		}
		if d.Eligible() != c.eligible {
			t.Errorf("%s: eligible %v, want %v (%q)", c.name, d.Eligible(), c.eligible, d.refusals())
		}
		if got, want := strings.Join(d.refusals(), "; "), strings.Join(c.why, "; "); got != want {
			t.Errorf("%s: refusals\n  %q\nwant\n  %q", c.name, got, want)
		}
		if d.Path != "/dev/"+c.name {
			t.Errorf("%s: path %q", c.name, d.Path)
		}
	}

	var out strings.Builder
	if err := PrintDisks(&out, disks); err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(out.String()), " ") // column widths aside
	for _, want := range []string{
		"/dev/sdb 4.0 GB usb yes SanDisk Cruzer Blade yes",
		"/dev/sda 256.1 GB ata no Samsung SSD 860 no: it holds the running system (/ is on sda); partition sda2 is mounted on /",
		"/dev/vda 536 MB virtio no - yes",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("PrintDisks lacks %q:\n%s", want, out.String())
		}
	}
}

// TestSystemDiskThroughMD checks that a root on md RAID marks every disk
// below it as the system disk.
func TestSystemDiskThroughMD(t *testing.T) {
	f := newFakeTree(t)
	sys := f.host(9, 0).systemDisks()
	if len(sys) != 2 || !sys["sde"] || !sys["sdf"] {
		t.Fatalf("system disks %v, want sde and sdf", sys)
	}
	// A root on a partition of sda: only sda.
	if sys := f.host(8, 2).systemDisks(); len(sys) != 1 || !sys["sda"] {
		t.Fatalf("system disks %v, want sda", sys)
	}
}

// TestSystemDiskFallback: when "/" is not on a block device (overlay in a
// container), the device /proc/mounts names for "/" is used.
func TestSystemDiskFallback(t *testing.T) {
	f := newFakeTree(t)
	h := f.host(0, 33) // anonymous device: no /sys/dev/block/0:33
	if sys := h.systemDisks(); len(sys) != 1 || !sys["sda"] {
		t.Fatalf("system disks %v, want sda from /proc/mounts", sys)
	}
}
