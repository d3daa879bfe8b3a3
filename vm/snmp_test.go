package vm

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/ncpos/ncpos/internal/metricstest"
	"github.com/ncpos/ncpos/internal/snmptest"
)

// The SNMP settings of the end-to-end image.
const (
	e2eCommunity     = "e2e-noc-read"
	e2eTrapCommunity = "e2e-noc-trap"
	e2eSNMPUser      = "noc"
	e2eAuthKey       = "e2e-auth-key-1"
	e2ePrivKey       = "e2e-priv-key-1"
)

// snmpConfig is the [snmp] section of the end-to-end image: SNMPv2c and
// an SNMPv3 user, traps to snmptrapd on the host (10.0.2.2 is the host's
// loopback through QEMU's user network).
func snmpConfig(trapPort int) string {
	return fmt.Sprintf(`
[snmp]
community = %q
location = "QEMU, lab rack 1"
contact = "noc@example.net"

[[snmp.user]]
name = %q
auth = "SHA-256"
auth_key = %q
priv = "AES"
priv_key = %q

[[snmp.trap]]
target = "10.0.2.2:%d"
community = %q
`, e2eCommunity, e2eSNMPUser, e2eAuthKey, e2ePrivKey, trapPort, e2eTrapCommunity)
}

// boxMetrics reads and parses the box's /metrics.
func boxMetrics(t *testing.T, v *VM) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := readAPI(v.Client(30*time.Second), v.StatusURL()+"metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	fams, err := metricstest.Parse(resp.Body)
	if err != nil {
		t.Fatalf("/metrics of the box: %v", err)
	}
	return fams
}

var metricValue = metricstest.Value

// snmpTool runs a net-snmp command against the box's forwarded agent,
// with a timeout and retries fit for a guest in software emulation.
func snmpTool(t *testing.T, udpPort int, tool string, args ...string) (string, error) {
	t.Helper()
	full := append([]string{"-t", "5", "-r", "2"}, args[:len(args)-1]...)
	full = append(full, fmt.Sprintf("udp:127.0.0.1:%d", udpPort), args[len(args)-1])
	return snmptest.Tool(t, tool, full...)
}

func v3Args(authKey, privKey string) []string {
	return []string{"-v3", "-l", "authPriv", "-u", e2eSNMPUser, "-a", "SHA-256", "-A", authKey, "-x", "AES", "-X", privKey}
}

// checkSNMP asks the booted box what a NOC would, with Debian's net-snmp
// tools through the forwarded UDP port: IF-MIB's 64-bit counters must lie
// between two reads of /metrics around the walk, port by port; SNMPv3
// answers with the right keys and says nothing to a wrong one or a wrong
// community, which the box counts; and snmptrapd on the host has the
// notifications of the boot and of the bypass the API forced.
func checkSNMP(t *testing.T, v *VM, udpPort int, trapd *snmptest.Trapd) {
	t.Helper()
	v2c := []string{"-v2c", "-c", e2eCommunity}
	before := boxMetrics(t, v)
	out, err := snmpTool(t, udpPort, "snmpbulkwalk", append(v2c, "1.3.6.1.2.1.31.1.1.1")...)
	if err != nil {
		t.Fatal(err)
	}
	xt := snmptest.Walk(out)
	out, err = snmpTool(t, udpPort, "snmpwalk", append(v3Args(e2eAuthKey, e2ePrivKey), "1.3.6.1.2.1.2.2.1.2")...)
	if err != nil {
		t.Fatal(err)
	}
	descr := snmptest.Walk(out)
	after := boxMetrics(t, v)

	cols := map[int]string{6: "ncpos_port_receive_bytes_total", 7: "ncpos_port_receive_packets_total",
		10: "ncpos_port_transmit_bytes_total", 11: "ncpos_port_transmit_packets_total"}
	names := map[string]bool{}
	checked := 0
	for i := 1; ; i++ {
		name, ok := xt[fmt.Sprintf(".1.3.6.1.2.1.31.1.1.1.1.%d", i)]
		if !ok {
			break
		}
		name = strings.Trim(strings.TrimPrefix(name, "STRING: "), `"`)
		names[name] = true
		if descr[fmt.Sprintf(".1.3.6.1.2.1.2.2.1.2.%d", i)] == "" {
			t.Errorf("ifDescr.%d (%s) missing from the SNMPv3 walk", i, name)
		}
		for col, metric := range cols {
			lo, ok1 := metricValue(before, metric, "port", name)
			hi, ok2 := metricValue(after, metric, "port", name)
			if !ok1 || !ok2 {
				t.Fatalf("/metrics has no %s for port %s", metric, name)
			}
			got, err := strconv.ParseUint(strings.TrimPrefix(xt[fmt.Sprintf(".1.3.6.1.2.1.31.1.1.1.%d.%d", col, i)], "Counter64: "), 10, 64)
			if err != nil {
				t.Fatalf("%s ifXTable column %d: %v", name, col, err)
			}
			if float64(got) < lo || float64(got) > hi {
				t.Errorf("%s ifXTable column %d = %d, /metrics %s went from %v to %v around the walk", name, col, got, metric, lo, hi)
			}
			checked++
		}
	}
	for _, want := range []string{"MGMT", "LAN1", "LAN2", "LAN3", "LAN4"} {
		if !names[want] {
			t.Errorf("ifName has no %s: %v", want, names)
		}
	}
	if rx, _ := metricValue(before, "ncpos_port_receive_packets_total", "port", "MGMT"); rx == 0 {
		t.Error("MGMT received nothing: the comparison proves nothing")
	}
	t.Logf("IF-MIB through the forwarded port: %d ports, %d 64-bit counters within /metrics before and after", len(names), checked)

	out, err = snmpTool(t, udpPort, "snmpget", append(v3Args(e2eAuthKey, e2ePrivKey), "1.3.6.1.2.1.1.5.0")...)
	if err != nil || !strings.Contains(out, `"ncpos-e2e"`) {
		t.Fatalf("SNMPv3 sysName: %v %s", err, out)
	}

	// Wrong credentials get nothing, and the box counts them.
	refused := []struct {
		name, outcome string
		args          []string
	}{
		{"wrong community", "bad_community", []string{"-v2c", "-c", "public"}},
		{"wrong auth key", "wrong_digest", v3Args("not-the-auth-key", e2ePrivKey)},
		{"wrong priv key", "decryption_error", v3Args(e2eAuthKey, "not-the-priv-key")},
	}
	counts := boxMetrics(t, v)
	for _, r := range refused {
		out, err := snmptest.Tool(t, "snmpget", append(r.args, fmt.Sprintf("udp:127.0.0.1:%d", udpPort), "1.3.6.1.2.1.1.5.0")...)
		if err == nil || strings.Contains(out, "ncpos-e2e") {
			t.Errorf("%s: answered: %s", r.name, out)
		}
	}
	for deadline := time.Now().Add(v.Within(30 * time.Second)); ; time.Sleep(time.Second) {
		now := boxMetrics(t, v)
		missing := ""
		for _, r := range refused {
			b, _ := metricValue(counts, "ncpos_snmp_packets_total", "outcome", r.outcome)
			a, _ := metricValue(now, "ncpos_snmp_packets_total", "outcome", r.outcome)
			if a <= b {
				missing = r.name
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not counted in ncpos_snmp_packets_total", missing)
		}
	}
	t.Logf("a wrong community, auth key and priv key got no answer and were counted")

	// ncposBypassChange for seg1 (row 1) in bypass (2), and ncposReset
	// from the boot.
	bypass := func() bool {
		for _, l := range trapd.Lines() {
			if strings.Contains(l, "OID: .1.3.6.1.4.1.32473.0.1") && strings.Contains(l, `.1.3.6.1.4.1.32473.1.2.1.2.1 = STRING: "seg1"`) &&
				strings.Contains(l, ".1.3.6.1.4.1.32473.1.2.1.5.1 = INTEGER: 2") {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(v.Within(30 * time.Second)); !bypass(); time.Sleep(time.Second) {
		if time.Now().After(deadline) {
			t.Fatalf("snmptrapd has no ncposBypassChange for seg1 in bypass:\n%s", strings.Join(trapd.Lines(), "\n"))
		}
	}
	if !trapd.WaitFor("OID: .1.3.6.1.4.1.32473.0.2", 10*time.Second) {
		t.Fatalf("snmptrapd has no ncposReset from the boot:\n%s", strings.Join(trapd.Lines(), "\n"))
	}
	t.Logf("snmptrapd on the host received ncposBypassChange (seg1 in bypass) and ncposReset")
}
