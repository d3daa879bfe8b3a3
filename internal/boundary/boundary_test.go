package boundary

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ncpos/ncpos"

// hostOnly are the packages (and everything under them) that only the
// build host and the tests use.
var hostOnly = []string{
	module + "/cmd",
	module + "/fleet",
	module + "/image", // the builder
	module + "/lab",
	module + "/update",
	module + "/vm",
}

// bpfLoaders are the appliance programs that load BPF programs: the
// datapath, the simulated bypass relay, and statusd's self-test
// generators and analyzers.
var bpfLoaders = map[string][]string{
	"github.com/cilium/ebpf": {"forwarderd", "bypassd", "statusd"},
	"github.com/asavie/xdp":  {"forwarderd", "statusd"},
}

// applianceOnly are packages the host command must not link: gokrazy's
// runtime (its root package starts supervision and takes over the box)
// and what runs only as the appliance's init and daemons (statusd's
// server, the watchdog's petter).
var applianceOnly = []string{
	"github.com/gokrazy/gokrazy",
	module + "/appliance",
	module + "/services",
	module + "/web",
	module + "/watchdog",
}

// hostShared are packages under an applianceOnly prefix that the host may
// link: the API types it decodes, the daemons' contracts they carry, the
// verdict on a box's health that an update holds a build to, and the
// self-test, whose report ncpos bench writes of a lab.
var hostShared = []string{
	module + "/web/api",
	module + "/web/selftest",
	module + "/web/verdict",
	module + "/watchdog/watchdogapi",
}

// goList runs go list for the appliance's platform, whatever the host's,
// so that Linux-only files (AF_XDP, netlink) are counted everywhere.
func goList(args ...string) ([]byte, error) {
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64")
	return cmd.Output()
}

func under(pkg, prefix string) bool {
	return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
}

// deps lists what pkg links (go list -deps).
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := goList("-deps", pkg)
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// appliancePrograms are the main packages under services/.
func appliancePrograms(t *testing.T) []string {
	t.Helper()
	out, err := goList("-f", "{{if eq .Name \"main\"}}{{.ImportPath}}{{end}}", module+"/services/...")
	if err != nil {
		t.Fatalf("go list services: %v", err)
	}
	progs := strings.Fields(string(out))
	if len(progs) < 5 {
		t.Fatalf("found %d appliance programs (%v), want init and the four daemons", len(progs), progs)
	}
	return progs
}

// violations are the linked packages that break the rules for prog.
func applianceViolations(prog string, linked []string) []string {
	name := prog[strings.LastIndex(prog, "/")+1:]
	var bad []string
	for _, p := range linked {
		for _, h := range hostOnly {
			if under(p, h) {
				bad = append(bad, p+" (host or lab code)")
			}
		}
		for lib, loaders := range bpfLoaders {
			if under(p, lib) && !slices.Contains(loaders, name) {
				bad = append(bad, p+" (BPF library in a program that loads no BPF)")
			}
		}
		if p == "testing" {
			bad = append(bad, p+" (test code)")
		}
	}
	return bad
}

func hostViolations(linked []string) []string {
	var bad []string
	for _, p := range linked {
		if slices.Contains(hostShared, p) {
			continue
		}
		for _, a := range applianceOnly {
			if under(p, a) {
				bad = append(bad, p)
			}
		}
	}
	return bad
}

func TestAppliancePrograms(t *testing.T) {
	for _, prog := range appliancePrograms(t) {
		linked := deps(t, prog)
		if bad := applianceViolations(prog, linked); len(bad) > 0 {
			t.Errorf("%s links:\n  %s", prog, strings.Join(bad, "\n  "))
		}
		t.Logf("%s: %d packages", prog, len(linked))
	}
}

func TestHostCommand(t *testing.T) {
	linked := deps(t, module+"/cmd/ncpos")
	if bad := hostViolations(linked); len(bad) > 0 {
		t.Errorf("cmd/ncpos links the appliance's runtime:\n  %s", strings.Join(bad, "\n  "))
	}
	t.Logf("cmd/ncpos: %d packages", len(linked))
}

// contracts are the packages of wire types and clients: statusd's API and
// each daemon's contract. They link nothing of ncpos but the transport
// (ipc, with the health report it carries), so that whoever speaks them,
// the host's commands among them, links none of the box's code.
var contracts = []string{
	module + "/web/api",
	module + "/forwarder/forwarderapi",
	module + "/bypass/bypassapi",
	module + "/watchdog/watchdogapi",
	module + "/appliance/initapi",
}

func contractViolations(contract string, linked []string) []string {
	var bad []string
	for _, p := range linked {
		if p == contract || !under(p, module) || under(p, module+"/ipc") {
			continue
		}
		bad = append(bad, p)
	}
	return bad
}

func TestContracts(t *testing.T) {
	for _, c := range contracts {
		if bad := contractViolations(c, deps(t, c)); len(bad) > 0 {
			t.Errorf("%s links:\n  %s", c, strings.Join(bad, "\n  "))
		}
	}
}

// TestRulesCatch feeds the rules the links they exist to stop, so that a
// rule that no longer matches anything is noticed.
func TestRulesCatch(t *testing.T) {
	for _, tc := range []struct {
		prog, pkg string
	}{
		{module + "/services/statusd", module + "/lab"},
		{module + "/services/statusd", module + "/image"},
		{module + "/services/statusd", module + "/lab/bpf"},
		{module + "/services/watchdogd", "github.com/cilium/ebpf"},
		{module + "/services/bypassd", "github.com/asavie/xdp"},
		{module + "/services/watchdogd", "github.com/cilium/ebpf/link"},
		{module + "/services/init", "testing"},
	} {
		if bad := applianceViolations(tc.prog, []string{tc.pkg}); len(bad) != 1 {
			t.Errorf("%s linking %s: violations %v, want one", tc.prog, tc.pkg, bad)
		}
	}
	if bad := applianceViolations(module+"/services/statusd", []string{module + "/partition", module + "/signature", module + "/web"}); len(bad) != 0 {
		t.Errorf("allowed links reported: %v", bad)
	}
	for _, pkg := range []string{"github.com/gokrazy/gokrazy", module + "/appliance", module + "/services/init", module + "/web", module + "/watchdog"} {
		if bad := hostViolations([]string{pkg}); len(bad) != 1 {
			t.Errorf("host linking %s: violations %v, want one", pkg, bad)
		}
	}
	if bad := contractViolations(module+"/web/api", []string{module + "/web/api", module + "/ipc", module + "/ipc/health", module + "/config", module + "/bypass/bypassapi"}); len(bad) != 2 {
		t.Errorf("web/api linking config and bypassapi: violations %v, want both", bad)
	}
	if bad := hostViolations([]string{"github.com/gokrazy/internal/fat", "github.com/gokrazy/tools/packer", module + "/web/api"}); len(bad) != 0 {
		t.Errorf("gokrazy's build libraries reported as its runtime: %v", bad)
	}
}
