// Package update updates a running appliance over the network (OTA): the
// new root goes to the inactive root partition through statusd's update
// endpoints (which hand it to gokrazy on the box), the new build is
// test-booted once, and only made permanent when it comes up healthy;
// otherwise the appliance returns to the build it had.
package update

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/ncpos/ncpos/bootpart"
	"github.com/ncpos/ncpos/web/api"
)

// Client talks to one appliance's statusd, over HTTPS.
type Client struct {
	StatusURL string // e.g. https://box/ (statusd)
	Password  string // the box's control password (user ncpos)
	// HTTP is the client to use; nil: one without keep-alive that checks
	// the box's key with TLS.
	HTTP *http.Client
	TLS  *tls.Config // e.g. a boxtls.Pin's; nil: verified against the system's CAs
	// Progress, when set, shows each upload's progress (bytes, rate,
	// time left) as a bar.
	Progress io.Writer

	unmarked atomic.Bool // the box refuses overrides marked as an update's
	// ticker makes RenewBypass's ticker (a channel and its stop); nil:
	// time.NewTicker's. Tests tick by hand.
	ticker func(period time.Duration) (<-chan time.Time, func())
	clk    clock // nil: the real one
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	// No keep-alive: the appliance reboots during an update, and a request
	// on a connection from before the reboot would fail with EOF.
	// 30 minutes, as statusd allows one update step: a root image over a
	// slow link to a remote site.
	return &http.Client{Timeout: 30 * time.Minute, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: c.TLS}}
}

// System reads statusd's /api/v1/system.
func (c *Client) System(ctx context.Context) (*api.System, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var s api.System
	if err := c.statusd().Get(ctx, "api/v1/system", &s); err != nil {
		return nil, fmt.Errorf("%s: %w", c.StatusURL, err)
	}
	return &s, nil
}

// step sends one update step (manifest, root, kernel, testboot, switch)
// to statusd.
func (c *Client) step(ctx context.Context, method, step string, body []byte) (string, error) {
	path := "api/v1/update/" + step
	var r io.Reader = bytes.NewReader(body)
	var bar *progressbar.ProgressBar
	if c.Progress != nil && len(body) > 1<<20 {
		bar = progressbar.NewOptions64(int64(len(body)),
			progressbar.OptionSetWriter(c.Progress),
			progressbar.OptionSetDescription("  "+step),
			progressbar.OptionShowBytes(true),
			progressbar.OptionShowTotalBytes(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(c.Progress) }),
		)
		pr := progressbar.NewReader(r, bar)
		r = &pr
	}
	answer, err := c.statusd().Send(ctx, method, path, r, int64(len(body)))
	if bar != nil {
		if err != nil {
			bar.Exit()
		} else {
			bar.Finish()
		}
	}
	return answer, err
}

// BootPartition is what the box says of its boot partition: the SHA-256
// of each file, and which slot it runs and boots (nil from a build
// without slots).
type BootPartition struct {
	Files map[string]string
	Slots *bootpart.State
}

// BootPartition reads the box's boot partition. The box hashes every
// file on it, two kernel files of 24 MiB among them: a few seconds on a
// box, minutes on an emulated one beside others, so it is bounded by the
// client's timeout alone.
func (c *Client) BootPartition(ctx context.Context) (*BootPartition, error) {
	var got BootPartition
	if err := c.statusd().Get(ctx, "api/v1/update/boot", &got); err != nil {
		return nil, err
	}
	if len(got.Files) == 0 {
		return nil, errors.New("GET api/v1/update/boot: no files")
	}
	return &got, nil
}

// loaderDifferences lists the loader and entry files of a build's boot
// partition (want: their hashes) that the box lacks or holds otherwise:
// what a new build changes that the box does not write over the network.
// Kernels, the files naming the default slot and the manifest are left
// out.
func loaderDifferences(want, box map[string]string) []string {
	want = maps.Clone(want)
	for _, name := range []string{bootpart.SlotA.Kernel(), bootpart.SlotB.Kernel(), bootpart.SyslinuxDefaultFile, bootpart.LoaderConfFile, bootpart.ManifestFile} {
		delete(want, strings.ToLower(name))
	}
	return bootpart.Differences(want, box)
}

// put sends a partition image and checks the SHA-256 the box computed of
// what it wrote.
func (c *Client) put(ctx context.Context, step string, data []byte) error {
	got, err := c.step(ctx, "PUT", step, data)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	if want := hex.EncodeToString(sum[:]); strings.TrimSpace(got) != want {
		return fmt.Errorf("update %s: appliance wrote data with SHA-256 %q, sent %s", step, got, want)
	}
	return nil
}
