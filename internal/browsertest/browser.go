// Package browsertest drives Debian's headless Chromium over the DevTools
// protocol, so that tests see the dashboard as a user's browser renders it.
//
// One browser loads the page, waits until the page itself says it has shown
// what the test needs, reads the DOM and takes the screenshot. Nothing waits
// on Chromium's virtual time: the dashboard polls the API for as long as it
// is open, and a page that always has a fetch pending kept the command-line
// --screenshot from ever finishing on a loaded host.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/ncpos/ncpos/internal/testenv"
)

// Browser is one headless Chromium with a profile of its own.
type Browser struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// Options are what differs between the tests that start a browser.
type Options struct {
	// TrustSPKI is the base64 SHA-256 of a server's public key that
	// Chromium accepts instead of a CA, as a pinning client does.
	TrustSPKI string
	// Width and Height of the window; 1280×1600 when zero.
	Width, Height int
	// Headers go with every request the browser makes, as a browser that
	// has signed in sends its Authorization.
	Headers map[string]string
}

// Start starts Chromium for t and stops it, with every helper process,
// when t ends. Without chromium the test is skipped unless
// NCPOS_REQUIRE_TOOLS=1.
func Start(t testing.TB, opts Options) *Browser {
	t.Helper()
	bin := lookChromium(t)
	if opts.Width == 0 {
		opts.Width, opts.Height = 1280, 1600
	}
	flags := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(t.TempDir()),
		// Chromium keeps its singleton socket in a directory of its own
		// under TMPDIR, and leaves it there when it is killed: the
		// test's temporary directory takes it, and takes it away.
		chromedp.Env("TMPDIR=" + t.TempDir()),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.WindowSize(opts.Width, opts.Height),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
	}
	if opts.TrustSPKI != "" {
		flags = append(flags, chromedp.Flag("ignore-certificate-errors-spki-list", opts.TrustSPKI))
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), flags...)
	ctx, cancel := chromedp.NewContext(actx)
	b := &Browser{ctx: ctx, cancel: func() { cancel(); acancel() }}
	t.Cleanup(b.cancel)
	// The browser lives as long as the context of its first run: start it
	// here, so that the timeouts of later steps do not end it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	if len(opts.Headers) > 0 {
		h := network.Headers{}
		for k, v := range opts.Headers {
			h[k] = v
		}
		if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
			t.Fatalf("setting the browser's headers: %v", err)
		}
		if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: h}); err != nil {
			t.Fatalf("setting the browser's headers: %v", err)
		}
	}
	return b
}

func lookChromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return testenv.LookPath(t, testenv.Tools, "chromium", "chromium")
}

// Load opens url and waits, for at most within, until the JavaScript
// expression ready is true in the page; it returns the page's DOM then.
func (b *Browser) Load(url, ready string, within time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(b.ctx, within)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		return "", fmt.Errorf("loading %s: %w", url, err)
	}
	if err := b.wait(ctx, ready, within); err != nil {
		return "", fmt.Errorf("%s: %w", url, err)
	}
	dom, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	if err != nil {
		return "", fmt.Errorf("%s: reading the DOM: %w", url, err)
	}
	return dom, nil
}

// Screenshot saves the whole page as it is now as a PNG at path.
func (b *Browser) Screenshot(path string, within time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(b.ctx, within)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return 0, fmt.Errorf("screenshot: %w", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return 0, err
	}
	return len(png), nil
}

// Eval runs the JavaScript expression js in the page and returns its
// value as a string (JSON for objects).
func (b *Browser) Eval(js string, within time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(b.ctx, within)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`String(`+js+`)`))
	if err != nil {
		return "", fmt.Errorf("evaluating %s: %w", js, err)
	}
	return v, nil
}

// Wait waits, for at most within, until the JavaScript expression ready
// is true in the page.
func (b *Browser) Wait(ready string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(b.ctx, within)
	defer cancel()
	return b.wait(ctx, ready, within)
}

func (b *Browser) wait(ctx context.Context, ready string, within time.Duration) error {
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](ready,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(within))); err != nil {
		return fmt.Errorf("waiting for %s: %w", ready, err)
	}
	return nil
}

// AllowDownloads has the browser save what the page downloads into dir,
// under the names the page gives.
func (b *Browser) AllowDownloads(dir string) error {
	_, err := chromedp.CallBrowser(b.ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir})
	if err != nil {
		return fmt.Errorf("allowing downloads: %w", err)
	}
	return nil
}
