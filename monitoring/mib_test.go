package monitoring

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/internal/snmptest"
	"github.com/ncpos/ncpos/internal/testenv"
	"github.com/ncpos/ncpos/web/snmp"
)

// TestMIBLint checks NCPOS-MIB with libsmi's smilint at its most
// thorough level: it must print nothing (smilint exits 0 even on errors).
func TestMIBLint(t *testing.T) {
	smilint := testenv.LookPath(t, testenv.Tools, "smilint", "smitools")
	cmd := exec.Command(smilint, "-l", "6", "NCPOS-MIB.txt")
	cmd.Env = append(os.Environ(), "SMIPATH="+snmptest.MIBDir())
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Fatalf("smilint: %v\n%s", err, out)
	}
}

// TestMIBTranslate has net-snmp read the MIB and name the objects the
// agent serves at the OIDs it serves them.
func TestMIBTranslate(t *testing.T) {
	tr := testenv.LookPath(t, testenv.Tools, "snmptranslate", "snmp")
	for name, oid := range map[string]string{
		"ncposAppliance":          snmp.NcposAppliance.String(),
		"ncposHealth":             snmp.NcposSystem.Append(snmp.NcposHealth).String(),
		"ncposLastReset":          snmp.NcposSystem.Append(snmp.NcposLastReset).String(),
		"ncposWatchdogDevice":     snmp.NcposSystem.Append(snmp.NcposWatchdogDevice).String(),
		"ncposSegmentName":        snmp.NcposSegmentEntry.Append(snmp.NcposSegmentName).String(),
		"ncposSegmentBypassState": snmp.NcposSegmentEntry.Append(snmp.NcposSegmentBypassState).String(),
		"ncposSegmentDrops":       snmp.NcposSegmentEntry.Append(snmp.NcposSegmentDrops).String(),
		"ncposBypassChange":       snmp.NcposBypassChange.String(),
		"ncposReset":              snmp.NcposReset.String(),
	} {
		cmd := exec.Command(tr, "-M", snmptest.MIBDir()+":.", "-m", "NCPOS-MIB", "-On", "NCPOS-MIB::"+name)
		// A fresh home, and only stdout compared: on a machine where
		// net-snmp never ran, it creates its persistent directory and
		// says so on stderr.
		cmd.Env = append(os.Environ(), "SNMP_PERSISTENT_DIR="+t.TempDir(), "HOME="+t.TempDir(), "SNMPCONFPATH="+t.TempDir())
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(out)) != oid {
			t.Errorf("snmptranslate %s: %v %s (stderr: %s), want %s", name, err, out, stderr.String(), oid)
		}
	}
}
