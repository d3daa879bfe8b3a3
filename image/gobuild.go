package image

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Program is a Go program to put into the root file system.
type Program struct {
	Pkg  string   // import path
	Path string   // absolute path in the root, e.g. /gokrazy/init
	Tags []string // build tags
}

// buildPrograms compiles programs as static linux/amd64 binaries into dir
// (named by their root path) with the build ID stamped into main.buildID.
func buildPrograms(ctx context.Context, modDir, dir, buildID string, progs []Program, logf func(string, ...any)) error {
	for _, p := range progs {
		out := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(p.Path, "/")))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		args := []string{"build", "-trimpath", "-ldflags", "-s -w -X main.buildID=" + buildID}
		if len(p.Tags) > 0 {
			args = append(args, "-tags", strings.Join(p.Tags, ","))
		}
		cmd := exec.CommandContext(ctx, "go", append(args, "-o", out, p.Pkg)...)
		cmd.Dir = modDir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		logf("go build %s", p.Pkg)
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building %s: %v\n%s", p.Pkg, err, stderr.String())
		}
	}
	return nil
}

// moduleDir finds the ncpos module the build runs in, because the programs
// in the image are compiled from its source.
func moduleDir() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the ncpos source tree (no go.mod): run ncpos build from the repository")
	}
	b, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	if !bytes.Contains(b, []byte("module github.com/ncpos/ncpos\n")) {
		return "", fmt.Errorf("%s is not the ncpos module: run ncpos build from the ncpos repository", gomod)
	}
	return filepath.Dir(gomod), nil
}
