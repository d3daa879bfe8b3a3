package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// SysClassNet is where Linux lists network interfaces.
const SysClassNet = "/sys/class/net"

// Resolve maps the profile's front-panel port names to Linux interface
// names, looking at sysClassNet (normally SysClassNet; tests pass a fake
// tree). A port with a PCI address is the interface whose device is that PCI
// function; a port whose PCI address is absent or not found is the nth
// network function with its pci_id, in PCI address order; failing both it
// falls back to its ifname, if that interface exists. An interface is given
// to one port only.
//
// Ports that cannot be found are not dropped silently: the map holds the
// ports that were found and the error names each missing one, so a caller
// can decide whether a partial box is usable.
func (p *Profile) Resolve(sysClassNet string) (map[string]string, error) {
	entries, err := os.ReadDir(sysClassNet)
	if err != nil {
		return nil, fmt.Errorf("config: resolving ports of platform %q: %w", p.Name, err)
	}
	byPCI := map[string][]string{} // PCI address -> interfaces
	byID := map[string][]string{}  // vendor:device -> PCI addresses, sorted
	exists := map[string]bool{}
	for _, e := range entries {
		ifname := e.Name()
		exists[ifname] = true
		addr, dir := pciAddressOf(filepath.Join(sysClassNet, ifname, "device"))
		if addr == "" {
			continue
		}
		if len(byPCI[addr]) == 0 {
			if id := pciIDOf(dir); id != "" {
				byID[id] = append(byID[id], addr)
			}
		}
		byPCI[addr] = append(byPCI[addr], ifname)
	}
	// Every network function counts for nth, with an interface or not:
	// one whose driver failed must not shift the ports after it.
	if all := networkFunctions(filepath.Join(filepath.Dir(filepath.Dir(sysClassNet)), "bus", "pci", "devices")); all != nil {
		byID = all
	}
	for _, addrs := range byID {
		slices.Sort(addrs)
	}
	// A port's PCI function: its address if that is there, else the nth
	// function of its ID.
	functionOf := func(port Port) string {
		if len(byPCI[port.PCI]) > 0 {
			return port.PCI
		}
		if addrs := byID[port.PCIID]; port.PCIID != "" && port.Nth < len(addrs) {
			return addrs[port.Nth]
		}
		return ""
	}

	ports := map[string]string{}
	used := map[string]string{} // interface -> port
	var problems []string
	// PCI matches first, so that an ifname fallback never takes an
	// interface that belongs to another port by its PCI address.
	for _, port := range p.Ports {
		fn := functionOf(port)
		ifs := byPCI[fn]
		if fn == "" || len(ifs) == 0 {
			continue
		}
		if len(ifs) > 1 {
			slices.Sort(ifs)
			problems = append(problems, fmt.Sprintf("%s: pci %s has several interfaces (%s)", port.Name, fn, strings.Join(ifs, ", ")))
			continue
		}
		if other := used[ifs[0]]; other != "" {
			problems = append(problems, fmt.Sprintf("%s: pci %s (%s) is already port %s", port.Name, fn, ifs[0], other))
			continue
		}
		ports[port.Name] = ifs[0]
		used[ifs[0]] = port.Name
	}
	for _, port := range p.Ports {
		if _, ok := ports[port.Name]; ok || len(byPCI[functionOf(port)]) > 1 {
			continue
		}
		if port.Ifname != "" && exists[port.Ifname] && used[port.Ifname] == "" {
			ports[port.Name] = port.Ifname
			used[port.Ifname] = port.Name
			continue
		}
		var looked []string
		if port.PCI != "" {
			looked = append(looked, "pci "+port.PCI)
		}
		if port.PCIID != "" {
			looked = append(looked, fmt.Sprintf("function %d of pci_id %s (%d found)", port.Nth, port.PCIID, len(byID[port.PCIID])))
		}
		if port.Ifname != "" {
			what := "ifname " + port.Ifname
			if other := used[port.Ifname]; other != "" {
				what += " (taken by " + other + ")"
			}
			looked = append(looked, what)
		}
		problems = append(problems, fmt.Sprintf("%s: no interface with %s", port.Name, strings.Join(looked, " or ")))
	}
	if len(problems) > 0 {
		return ports, fmt.Errorf("config: platform %q: ports not found in %s: %s", p.Name, sysClassNet, strings.Join(problems, "; "))
	}
	return ports, nil
}

// pciAddressOf returns the PCI address of the device behind a
// /sys/class/net/<if>/device link, or "". The link does not always end at the
// PCI function: virtio-net devices sit one level below it
// (.../0000:00:04.0/virtio1), so the nearest PCI-looking path component wins.
// Virtual interfaces (lo, veth, bridges) have no device link. dir is the
// PCI function's sysfs directory.
func pciAddressOf(deviceLink string) (addr, dir string) {
	dev, err := filepath.EvalSymlinks(deviceLink)
	if err != nil {
		return "", ""
	}
	for dev != "" && dev != "/" && dev != "." {
		if base := filepath.Base(dev); pciRE.MatchString(base) {
			return base, dev
		}
		dev = filepath.Dir(dev)
	}
	return "", ""
}

// networkFunctions lists the network PCI functions (class 0x02) under
// dir (/sys/bus/pci/devices) by vendor:device, or nil when dir cannot be
// read.
func networkFunctions(dir string) map[string][]string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := map[string][]string{}
	for _, e := range entries {
		d := filepath.Join(dir, e.Name())
		if b, err := os.ReadFile(filepath.Join(d, "class")); err != nil || !strings.HasPrefix(strings.TrimSpace(string(b)), "0x02") {
			continue
		}
		if id := pciIDOf(d); id != "" {
			out[id] = append(out[id], e.Name())
		}
	}
	return out
}

// pciIDOf reads vendor:device of the PCI function in dir, or "".
func pciIDOf(dir string) string {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return ""
		}
		return strings.TrimPrefix(strings.TrimSpace(string(b)), "0x")
	}
	v, d := read("vendor"), read("device")
	if v == "" || d == "" {
		return ""
	}
	return v + ":" + d
}
