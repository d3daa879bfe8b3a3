package control

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/watchdog"
	"github.com/ncpos/ncpos/web/gokrazy"
)

// Rebooter reboots the appliance on request.
type Rebooter interface {
	// Reboot records a planned reboot (so the next boot does not blame the
	// watchdog) and asks for it. It returns once the reboot is under way.
	Reboot(ctx context.Context, reason string) error
}

// GokrazyRebooter reboots through gokrazy's unix socket, so that gokrazy
// stops every service with SIGTERM first (watchdogd records a planned
// stop) and unmounts /perm. Before that it asks bypassd to put every pair
// into bypass and read the relays back (POST /planned), so traffic passes
// while the box restarts.
type GokrazyRebooter struct {
	RunDir  string           // the daemons' sockets; "" skips bypassd
	Records watchdog.Records // where the planned record goes
	Socket  string           // default gokrazy.Socket
}

// Reboot implements Rebooter.
func (g GokrazyRebooter) Reboot(ctx context.Context, reason string) (err error) {
	if err := g.Records.WritePlanned("reboot", time.Now()); err != nil {
		return fmt.Errorf("recording the planned reboot: %w", err)
	}
	defer func() {
		// No reboot under way: a later failure must not be put down to it.
		if err != nil {
			if cerr := g.Records.ClearPlanned(); cerr != nil {
				log.Printf("statusd: %v", cerr)
			}
		}
	}()
	if g.RunDir != "" {
		_, err := bypassapi.NewClient(g.RunDir, 15*time.Second).Plan(ctx, bypassapi.PlanReboot, reason)
		if err != nil && !ipc.NotRunning(err) {
			// Reboot all the same: the relays fall to bypass without
			// power or heartbeat anyway.
			log.Printf("statusd: bypassd did not confirm bypass before the reboot: %v", err)
		}
	}
	hc := gokrazy.Client(g.Socket, 10*time.Second)
	// async: gokrazy answers at once and then stops the services; a plain
	// reboot (no kexec) resets the hardware as the engineer expects.
	form := url.Values{"async": {"true"}, "kexec": {"off"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://gokrazy/reboot", strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("asking gokrazy to reboot: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("asking gokrazy to reboot: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}
