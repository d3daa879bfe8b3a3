package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, toml, wantErr string
		authRead            bool
	}{
		{"valid", "platform = \"qemu\"\nservices = [\"statusd\"]\n[status]\nauth_read = true\npassword = \"a-long-test-password\"\n[syslog]\ntarget = \"tcp://192.0.2.9:514\"\n", "", true},
		{"invalid", "[status]\nport = 0\n", "status.port", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name+".toml")
			os.WriteFile(p, []byte(tc.toml), 0o644)
			cfg, err := loadConfig(p)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("loadConfig = %v, want an error naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || cfg.Status.AuthRead != tc.authRead || cfg.Status.Password != "a-long-test-password" || cfg.Syslog.Target != "tcp://192.0.2.9:514" {
				t.Fatalf("loadConfig = %+v, %v", cfg, err)
			}
		})
	}
}
