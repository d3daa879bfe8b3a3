package update

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Reboot asks statusd for a planned reboot (a full reboot through the
// firmware, not kexec, so the bootloader reads the new configuration;
// recorded, so the next boot does not blame the watchdog). The connection
// may drop while the appliance goes down; that is success.
func (c *Client) Reboot(ctx context.Context, reason string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	body, _ := json.Marshal(map[string]string{"reason": reason})
	err := c.postJSON(ctx, "api/v1/control/reboot", body)
	if err != nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		return nil
	}
	return err
}

// DefaultLease is how long the bypass overrides of an update outlast the
// client's last renewal of them: a client killed or cut off mid-update
// leaves its segments in bypass for at most that long, not for a
// maintenance window. It covers a reboot into the test boot and a
// fallback from it (panic, watchdog reset, boot) with room to spare.
const DefaultLease = 10 * time.Minute

// Bypass asks statusd to put every segment that has a bypass relay into
// bypass before the update, for lease (RenewBypass keeps them). It returns
// the segments it overrode and an error naming what could not be done;
// segments without a relay are reported too, since their traffic stops
// during the reboot.
func (c *Client) Bypass(ctx context.Context, reason string, lease time.Duration) ([]string, error) {
	segs, err := c.Segments(ctx)
	if err != nil {
		return nil, err
	}
	var problems, done []string
	for _, s := range segs {
		if s.BypassPair == "" {
			problems = append(problems, fmt.Sprintf("segment %s has no bypass relay", s.Name))
			continue
		}
		if err := c.override(ctx, s.Name, reason, lease); err != nil {
			problems = append(problems, fmt.Sprintf("segment %s: %v", s.Name, err))
			continue
		}
		done = append(done, s.Name)
	}
	if len(problems) > 0 {
		return done, errors.New(strings.Join(problems, "; "))
	}
	return done, nil
}

func (c *Client) override(ctx context.Context, segment, reason string, lease time.Duration) error {
	body, _ := json.Marshal(map[string]string{
		"segment": segment, "state": "bypass", "reason": reason, "expires_in": lease.String(),
	})
	return c.postJSON(ctx, "api/v1/control/bypass", body)
}

// RenewBypass sets the overrides of segments again, for lease, every
// fifth of it, until the returned stop is called (stop waits for a
// renewal under way; calling it again does nothing). A renewal the box
// misses (it reboots) is logged and tried again at the next.
func (c *Client) RenewBypass(ctx context.Context, segments []string, reason string, lease time.Duration, logf func(string, ...any)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(lease / 5)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			for _, s := range segments {
				if err := c.override(ctx, s, reason, lease); err != nil && ctx.Err() == nil {
					logf("renewing the bypass override of segment %s: %v (tried again in %v)", s, err, lease/5)
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
}

// EndBypass ends the overrides Bypass set (state auto), retrying for a
// while: the appliance may still be rebooting.
func (c *Client) EndBypass(ctx context.Context, segments []string) error {
	var err error
	for try := 0; try < 30 && len(segments) > 0; try++ {
		if try > 0 {
			time.Sleep(2 * time.Second)
		}
		var left []string
		err = nil
		for _, s := range segments {
			body, _ := json.Marshal(map[string]string{"segment": s, "state": "auto"})
			if e := c.postJSON(ctx, "api/v1/control/bypass", body); e != nil {
				left, err = append(left, s), e
			}
		}
		segments = left
	}
	return err
}

func (c *Client) getJSON(ctx context.Context, path string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", c.StatusURL+path, nil)
	if err != nil {
		return err
	}
	req.SetBasicAuth("ncpos", c.Password)
	resp, err := c.http().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func (c *Client) postJSON(ctx context.Context, path string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", c.StatusURL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("ncpos", c.Password)
	resp, err := c.http().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("POST %s: %s: %s", path, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}
