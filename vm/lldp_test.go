package vm

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ncpos/ncpos/internal/lldpdtest"
	"github.com/ncpos/ncpos/lab"
	"github.com/ncpos/ncpos/web/api"
)

// tapCable joins the test's end of a cable of the VM to a tap in a
// namespace of its own, frame for frame both ways, until the test ends,
// so that a daemon of the host (lldpd) sits at the far end of the box's
// port. It returns the namespace and the tap's name.
func tapCable(t *testing.T, c cable, name string) (ns, tap string) {
	t.Helper()
	n, tap := tapNetns(t, c, name)
	return n.Name, tap
}

// tapNetns is tapCable's namespace itself, for a test that does more in
// it than run a daemon.
func tapNetns(t *testing.T, c cable, name string) (*lab.Netns, string) {
	t.Helper()
	n, err := lab.NewNetns(fmt.Sprintf("%s%s-%04x", lab.Prefix, name, rand.IntN(1<<16)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Delete() })
	tap := lab.Prefix + "tap"
	f, err := n.Tap(tap)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	go func() {
		buf := make([]byte, 16384)
		for {
			k, err := f.Read(buf)
			if err != nil {
				return
			}
			c.send(buf[:k])
		}
	}()
	go func() {
		buf := make([]byte, 16384)
		for {
			k, _, err := c.conn.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if _, err := f.Write(buf[:k]); err != nil {
				return
			}
		}
	}()
	return n, tap
}

// lldpNames are the system names of the neighbours port shows.
func lldpNames(ports []api.Port, port string) []string {
	var out []string
	for _, p := range ports {
		if p.Name == port && p.LLDP != nil {
			for _, n := range p.LLDP.Neighbors {
				out = append(out, n.SystemName)
			}
		}
	}
	return out
}

// checkLLDP runs Debian's lldpd at the far end of LAN1 and of LAN2 (seg1):
// the box shows each as its port's neighbour, in the API and in SNMP's
// lldpRemSysName, each lldpd hears the other through the box and no one
// else, and a neighbour goes once its lldpd stops.
func checkLLDP(t *testing.T, v *VM, snmpPort int, community string, lan1, lan2 cable) {
	names := map[string]string{"LAN1": "neighbour-lan1", "LAN2": "neighbour-lan2"}
	lldpds := map[string]*lldpdtest.Lldpd{}
	for port, c := range map[string]cable{"LAN1": lan1, "LAN2": lan2} {
		ns, tap := tapCable(t, c, strings.ToLower(port))
		lldpds[port] = lldpdtest.Start(t, ns, tap, names[port])
	}
	start := time.Now()
	var ports struct{ Ports []api.Port }
	for deadline := time.Now().Add(v.Within(time.Minute)); ; time.Sleep(time.Second) {
		getAPI(t, v, "api/v1/ports", &ports)
		if slices.Equal(lldpNames(ports.Ports, "LAN1"), []string{names["LAN1"]}) && slices.Equal(lldpNames(ports.Ports, "LAN2"), []string{names["LAN2"]}) {
			break
		}
		if time.Now().After(deadline) {
			for _, p := range ports.Ports {
				if p.Name == "LAN1" || p.Name == "LAN2" {
					b, _ := json.Marshal(p)
					t.Logf("%s: %s", p.Name, b)
				}
			}
			t.Fatalf("the box shows LAN1: %q, LAN2: %q; want each lldpd as its port's one neighbour",
				lldpNames(ports.Ports, "LAN1"), lldpNames(ports.Ports, "LAN2"))
		}
	}
	t.Logf("the API shows both neighbours %v after lldpd started", time.Since(start).Round(time.Second))

	// The box forwards LLDP and sends none: each lldpd hears the other.
	lldpds["LAN1"].Hears(t, names["LAN2"], v.Within(30*time.Second))
	lldpds["LAN2"].Hears(t, names["LAN1"], v.Within(30*time.Second))

	// An NMS reads them from LLDP-MIB's lldpRemSysName.
	out, err := snmpTool(t, snmpPort, "snmpwalk", "-v2c", "-c", community, "-On", "1.0.8802.1.1.2.1.4.1.1.9")
	if err != nil {
		t.Fatalf("snmpwalk lldpRemSysName: %v\n%s", err, out)
	}
	for _, n := range names {
		if !strings.Contains(out, `"`+n+`"`) {
			t.Errorf("lldpRemSysName lacks %s:\n%s", n, out)
		}
	}
	t.Logf("lldpRemSysName:\n%s", strings.TrimSpace(out))

	lldpds["LAN1"].Stop(syscall.SIGTERM)
	stopped := time.Now()
	for deadline := time.Now().Add(v.Within(30 * time.Second)); ; time.Sleep(time.Second) {
		getAPI(t, v, "api/v1/ports", &ports)
		if len(lldpNames(ports.Ports, "LAN1")) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("LAN1 still shows %q after its lldpd stopped", lldpNames(ports.Ports, "LAN1"))
		}
	}
	t.Logf("LAN1's neighbour gone %v after its lldpd stopped", time.Since(stopped).Round(time.Second))
	if got := lldpNames(ports.Ports, "LAN2"); !slices.Equal(got, []string{names["LAN2"]}) {
		t.Errorf("LAN2 shows %q once LAN1's lldpd stopped, want %s still", got, names["LAN2"])
	}
}
