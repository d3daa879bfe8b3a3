//go:build ncpos_testimage

package appliance

import (
	"log"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/gokrazy/gokrazy"
)

// TestDir holds a test image's test programs (image.Options.TestPrograms).
const TestDir = "/user/test"

func init() {
	testPrograms = func() []*gokrazy.Service {
		ents, err := os.ReadDir(TestDir)
		if err != nil {
			log.Printf("test image: %v", err)
			return nil
		}
		var out []*gokrazy.Service
		for _, e := range ents {
			log.Printf("test image: starting %s", e.Name())
			out = append(out, gokrazy.NewService(exec.Command(filepath.Join(TestDir, e.Name()))))
		}
		return out
	}
}
