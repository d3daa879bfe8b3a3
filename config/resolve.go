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
// function; a port whose PCI address is absent or not found falls back to its
// ifname, if that interface exists. An interface is given to one port only.
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
	exists := map[string]bool{}
	for _, e := range entries {
		ifname := e.Name()
		exists[ifname] = true
		if addr := pciAddressOf(filepath.Join(sysClassNet, ifname, "device")); addr != "" {
			byPCI[addr] = append(byPCI[addr], ifname)
		}
	}

	ports := map[string]string{}
	used := map[string]string{} // interface -> port
	var problems []string
	// PCI matches first, so that an ifname fallback never takes an
	// interface that belongs to another port by its PCI address.
	for _, port := range p.Ports {
		ifs := byPCI[port.PCI]
		if port.PCI == "" || len(ifs) == 0 {
			continue
		}
		if len(ifs) > 1 {
			slices.Sort(ifs)
			problems = append(problems, fmt.Sprintf("%s: pci %s has several interfaces (%s)", port.Name, port.PCI, strings.Join(ifs, ", ")))
			continue
		}
		ports[port.Name] = ifs[0]
		used[ifs[0]] = port.Name
	}
	for _, port := range p.Ports {
		if _, ok := ports[port.Name]; ok || len(byPCI[port.PCI]) > 1 {
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
// Virtual interfaces (lo, veth, bridges) have no device link.
func pciAddressOf(deviceLink string) string {
	dev, err := filepath.EvalSymlinks(deviceLink)
	if err != nil {
		return ""
	}
	for dev != "" && dev != "/" && dev != "." {
		if base := filepath.Base(dev); pciRE.MatchString(base) {
			return base
		}
		dev = filepath.Dir(dev)
	}
	return ""
}
