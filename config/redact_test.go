package config

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	inForce := `hostname = "fw1"
[auth]
radius = [{server = "192.0.2.10", secret = "first-secret-1"}, {server = "192.0.2.11:1812", secret = 'second-secret-2'}]
`
	tables := `[[auth.radius]]
server = "192.0.2.10"
secret = """third-secret-3"""
[[auth.radius]]
secret = "fourth-secret-4"
server = "192.0.2.12"
`
	for _, text := range []string{inForce, tables} {
		red := string(Redact([]byte(text)))
		for _, s := range []string{"first", "second", "third", "fourth"} {
			if strings.Contains(red, s+"-secret") {
				t.Errorf("redacted text shows the %s secret:\n%s", s, red)
			}
		}
		if strings.Count(red, `"`+RedactedSecret+`"`) != 2 || !strings.Contains(red, "192.0.2.1") {
			t.Errorf("redacted:\n%s", red)
		}
		if _, err := Parse("x.toml", []byte(red+"[[segment]]\nname = \"s\"\nports = [\"LAN1\", \"LAN2\"]\n")); err == nil || !strings.Contains(err.Error(), RedactedSecret) {
			t.Errorf("a redacted secret passed the check: %v", err)
		}
	}

	// The secret in force comes back for the same server, wherever it
	// moved to; a changed secret is taken as given.
	cand := `[auth]
radius = [{server = "192.0.2.11:1812", secret = "` + RedactedSecret + `"}, {server = "192.0.2.10", secret = "a-new-secret-10"}]
`
	got, err := Unredact([]byte(cand), []byte(inForce))
	want := `[auth]
radius = [{server = "192.0.2.11:1812", secret = 'second-secret-2'}, {server = "192.0.2.10", secret = "a-new-secret-10"}]
`
	if err != nil || string(got) != want {
		t.Errorf("Unredact: %v\n%s\nwant\n%s", err, got, want)
	}
	if _, err := Unredact(Redact([]byte(tables)), []byte(inForce)); err == nil || !strings.Contains(err.Error(), `auth.radius[1].secret`) || !strings.Contains(err.Error(), "192.0.2.12") {
		t.Errorf("a placeholder for a server not in force: %v", err)
	}
	if got, err := Unredact(Redact([]byte(inForce)), []byte(inForce)); err != nil || string(got) != inForce {
		t.Errorf("Unredact(Redact(x), x) = %v\n%s", err, got)
	}
}
