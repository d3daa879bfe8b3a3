package appliance

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ncpos/ncpos/internal/durable"
)

// machineIDPath is where gokrazy looks for the machine id first.
const machineIDPath = "/perm/machine-id"

// machineID returns the box's identity, creating it on first boot. It lives
// on /perm, so it survives updates and reinstalls that keep /perm: a fleet
// monitor can tell boxes apart, and a test can tell /perm was kept. It is
// written once, never again.
func machineID(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
	} else if !os.IsNotExist(err) {
		return "", err
	}
	buf := make([]byte, 16)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	id := hex.EncodeToString(buf)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	if err := durable.WriteFile(path, []byte(id+"\n"), 0o444); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return id, nil
}
