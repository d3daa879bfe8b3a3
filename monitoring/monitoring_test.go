package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncpos/ncpos/internal/testenv"
)

// promtool finds Debian's promtool (package prometheus); the tests are
// skipped without it unless NCPOS_REQUIRE_TOOLS=1.
func promtool(t *testing.T) string {
	t.Helper()
	return testenv.LookPath(t, testenv.Tools, "promtool", "prometheus")
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestPromtoolCheckRules(t *testing.T) {
	out := run(t, promtool(t), "check", "rules", "rules.yml")
	t.Log(out)
	if !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool check rules: %s", out)
	}
}

func TestPromtoolTestRules(t *testing.T) {
	out := run(t, promtool(t), "test", "rules", "rules_test.yml")
	t.Log(out)
	if !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool test rules: %s", out)
	}
}

// TestRulesCovered: every alert in rules.yml has a unit test that expects
// it to fire.
func TestRulesCovered(t *testing.T) {
	tests, err := os.ReadFile("rules_test.yml")
	if err != nil {
		t.Fatal(err)
	}
	firing := map[string]bool{}
	var current string
	for _, line := range strings.Split(string(tests), "\n") {
		l := strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(l, "alertname: "); ok {
			current = v
		}
		if strings.HasPrefix(l, "- exp_labels:") {
			firing[current] = true
		}
	}
	required := []string{"NcposApplianceDown", "NcposSegmentInBypass", "NcposSegmentDisconnected", "NcposWatchdogReset",
		"NcposRebooted", "NcposPortDown", "NcposHighDropRate", "NcposForwarderUnhealthy", "NcposDaemonDown", "NcposHighTemperature"}
	for _, a := range required {
		if !strings.Contains(string(Rules), "alert: "+a+"\n") {
			t.Errorf("rules.yml has no alert %s", a)
		}
		if !firing[a] {
			t.Errorf("rules_test.yml never expects %s to fire", a)
		}
	}
}

type grafanaDashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID      int    `json:"id"`
		Type    string `json:"type"`
		Title   string `json:"title"`
		GridPos struct{ X, Y, W, H int }
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// TestGrafanaDashboard checks the dashboard's structure and has promtool
// parse every query (as recording rules, with Grafana's variables
// replaced), so a typo in PromQL fails here rather than on a wall display.
func TestGrafanaDashboard(t *testing.T) {
	var d grafanaDashboard
	if err := json.Unmarshal(GrafanaDashboard, &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	if d.UID == "" || d.Title == "" {
		t.Fatalf("uid %q title %q", d.UID, d.Title)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["datasource"] != "datasource" || vars["instance"] != "query" {
		t.Fatalf("templating %v, want a datasource and an instance variable", vars)
	}
	ids := map[int]bool{}
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: grafana\n    rules:\n")
	n := 0
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.X+p.GridPos.W > 24 || p.GridPos.W <= 0 || p.GridPos.H <= 0 {
			t.Errorf("panel %q: gridPos %+v", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			expr := strings.NewReplacer("$__rate_interval", "1m", "$instance", ".+").Replace(tg.Expr)
			b, _ := json.Marshal(expr) // a JSON string is a YAML string
			n++
			fmt.Fprintf(&rules, "      - record: grafana:panel%d\n        expr: %s\n", n, b)
		}
	}
	f := filepath.Join(t.TempDir(), "grafana-queries.yml")
	if err := os.WriteFile(f, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := run(t, promtool(t), "check", "rules", f)
	t.Logf("%d Grafana queries parse: %s", n, strings.TrimSpace(out))
}

// TestAlertmanagerConfig checks alertmanager.yml with Debian's amtool,
// and that its routes send the rules' alerts to the NOC's receiver.
func TestAlertmanagerConfig(t *testing.T) {
	amtool := testenv.LookPath(t, testenv.Tools, "amtool", "prometheus-alertmanager")
	out := run(t, amtool, "check-config", "alertmanager.yml")
	if !strings.Contains(out, "SUCCESS") {
		t.Fatalf("amtool check-config: %s", out)
	}
	for _, labels := range [][]string{
		{"alertname=NcposSegmentInBypass", "severity=warning", "box=b1", "segment=seg1"},
		{"alertname=NcposRebooted", "severity=info", "box=b1"},
		{"alertname=NcposApplianceDown", "severity=critical", "box=b1"},
	} {
		// amtool fails when the alert would reach another receiver.
		run(t, amtool, append([]string{"config", "routes", "test", "--config.file=alertmanager.yml", "--verify.receivers=noc"}, labels...)...)
	}
}
