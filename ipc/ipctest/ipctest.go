// Package ipctest runs a stand-in daemon on a unix socket for the tests
// of the daemons' clients.
package ipctest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ncpos/ncpos/ipc"
)

// Serve serves h as daemon in a new temporary run directory until the
// test ends, waits until its socket answers /livez, and returns the
// directory.
func Serve(t *testing.T, daemon string, h http.Handler) string {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ipc.Serve(ctx, dir, daemon, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("stand-in %s: %v", daemon, err)
		}
	})
	c := ipc.NewClient(dir, daemon, time.Second)
	for deadline := time.Now().Add(5 * time.Second); c.Live(ctx) != nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("stand-in %s did not come up", daemon)
		}
	}
	return dir
}
