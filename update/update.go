package update

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ncpos/ncpos/boxtls"
	"github.com/ncpos/ncpos/image"
	"github.com/ncpos/ncpos/image/partition"
	"github.com/ncpos/ncpos/web/api"
)

// Options tunes an update.
type Options struct {
	// Timeout bounds the wait for the new build to come up healthy (and for
	// the fallback to the old one).
	Timeout time.Duration
	// Settle is how long the new build must stay healthy before it is made
	// permanent.
	Settle time.Duration
	// Downgrade lets the appliance take a build older than the one it
	// runs; without it, it refuses one.
	Downgrade bool
	// DryRun says what the update would change, and whether the
	// appliance would take the build, and changes nothing.
	DryRun bool
	// RewriteBoot writes the boot partition even when it holds what the
	// update would write (to mend one that was damaged).
	RewriteBoot bool
	Logf        func(format string, args ...any)
}

// Result says how an update ended.
type Result struct {
	From, To  string // build IDs
	Permanent bool   // the new build runs and will boot from now on
	// BootKept: the boot partition held what the update would have
	// written (kernel, loaders, entries), so it was not rewritten.
	BootKept bool
	Duration time.Duration
	// Plan is what a dry run would do, line by line.
	Plan []string
}

var rootArg = regexp.MustCompile(`root=PARTUUID=([0-9a-f]{8})-0([23])\b`)

// bootedRoot finds the disk signature and the root partition the
// bootloader starts, from the kernel command line.
func bootedRoot(cmdline string) (uint32, int, error) {
	m := rootArg.FindStringSubmatch(cmdline)
	if m == nil {
		return 0, 0, fmt.Errorf("kernel command line %q names no root=PARTUUID=<sig>-02/03", cmdline)
	}
	sig, _ := strconv.ParseUint(m[1], 16, 32)
	part, _ := strconv.Atoi(m[2])
	return uint32(sig), part, nil
}

// runningRoot is the partition the running system uses: the booted one,
// unless gokrazy test-boots the other (then "/" is that partition's device
// rather than /dev/root).
func runningRoot(s *api.System, booted int) int {
	dev := s.Root.Device
	if dev == "/dev/root" || dev == "" {
		return booted
	}
	if n, err := strconv.Atoi(dev[len(strings.TrimRight(dev, "0123456789")):]); err == nil {
		return n
	}
	return booted
}

// ImageBuildID reads the build ID from the image's root file system.
func ImageBuildID(im *image.Image) (string, error) {
	out, err := exec.Command("unsquashfs", "-o", strconv.FormatInt(im.Parts[partition.RootA].Offset, 10),
		"-cat", im.Path, "etc/ncpos/build-id").Output()
	if err != nil {
		return "", fmt.Errorf("reading the build ID from %s: %w", im.Path, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Run updates the appliance behind c to the image im. It writes the new
// root to the inactive partition and a boot partition (kernel) that still
// boots the current root, asks gokrazy for a one-shot test boot of the new
// root, reboots, and makes the new root permanent only once it has been
// healthy for Settle. If the new build does not come up healthy, the next
// boot (a reboot the command asks for, or the watchdog's) returns to the
// old root, and Run says so in its error.
func Run(ctx context.Context, c *Client, im *image.Image, o Options) (*Result, error) {
	start := time.Now()
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Settle == 0 {
		o.Settle = 10 * time.Second
	}
	// A box on a bad link, or busy right after its boot, may miss one
	// request: three tries before giving up.
	var sys *api.System
	var err error
	for try := 1; ; try++ {
		if sys, err = c.System(ctx); err == nil {
			break
		}
		var mismatch *boxtls.MismatchError
		if errors.As(err, &mismatch) {
			return nil, err // another try will not change the key
		}
		if try == 3 || ctx.Err() != nil {
			return nil, fmt.Errorf("appliance not reachable (%d tries): %w", try, err)
		}
		logf("appliance not answering (%v), trying again", err)
		time.Sleep(2 * time.Second)
	}
	sig, booted, err := bootedRoot(sys.Cmdline)
	if err != nil {
		return nil, err
	}
	if r := runningRoot(sys, booted); r != booted {
		return nil, fmt.Errorf("the appliance is test-booting root %d (boots %d); let it finish or reboot it first", r, booted)
	}
	to, err := ImageBuildID(im)
	if err != nil {
		return nil, err
	}
	res := &Result{From: sys.BuildID, To: to}
	if to == sys.BuildID {
		return nil, fmt.Errorf("the appliance already runs build %s", to)
	}
	logf("appliance runs build %s from root partition %d; updating to %s", sys.BuildID, booted, to)
	// The appliance checks the build's signature and age before it
	// takes any part of it, and then that each part is the one signed.
	manifest, err := im.Manifest(ctx)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if o.Downgrade {
		q.Set("downgrade", "1")
	}
	if o.DryRun {
		q.Set("check", "1")
	}
	step := "manifest"
	if len(q) > 0 {
		step += "?" + q.Encode()
	}
	said, err := c.step(ctx, "PUT", step, manifest)
	if err != nil {
		return nil, fmt.Errorf("manifest of build %s: %w (the appliance still runs %s; nothing written)", to, err, sys.BuildID)
	}
	logf("appliance: %s", strings.TrimSpace(said))
	segs, err := c.reportedSegments(ctx, 30*time.Second)
	if err != nil {
		return nil, fmt.Errorf("reading the segments before the update: %w", err)
	}
	before := BaselineOf(segs)
	if o.DryRun {
		res.Plan, err = plan(ctx, c, im, sys.BuildID, to, sig, booted, before, o)
		res.Duration = time.Since(start)
		return res, err
	}
	for name, st := range before {
		logf("before the update: segment %s %s", name, st)
	}

	overridden, err := c.Bypass(ctx, "ncpos update to "+to)
	if err != nil {
		logf("WARNING: could not put the segments into bypass (%v); traffic may stop during the reboot", err)
	}
	// The overrides are kept on /perm across the reboot; whatever the
	// outcome, they go once the update is over.
	defer func() {
		if err := c.EndBypass(context.WithoutCancel(ctx), overridden); err != nil {
			logf("WARNING: could not end the update's bypass overrides (%v); they expire by themselves within 30m", err)
		}
	}()

	root, err := im.RootSquashfs()
	if err != nil {
		return nil, err
	}
	logf("writing root (%d bytes) to the inactive root partition", len(root))
	if err := c.put(ctx, "root", root); err != nil {
		return nil, fmt.Errorf("new root: %w (the appliance still runs %s)", err, sys.BuildID)
	}
	kernel, boot, err := bootImage(ctx, im, sig, booted)
	if err != nil {
		return nil, err
	}
	if o.RewriteBoot {
		logf("rewriting the boot partition, as asked")
	} else if diff, err := c.bootDifferences(ctx, boot); err != nil {
		logf("cannot compare the boot partition (%v): writing it", err)
	} else if len(diff) == 0 {
		logf("kernel, loaders and boot entries unchanged: the boot partition is left as it is")
		res.BootKept = true
	} else {
		logf("the boot partition differs in %s", strings.Join(diff, ", "))
	}
	if !res.BootKept {
		logf("writing boot partition (kernel %d bytes)", len(kernel))
		if err := c.put(ctx, "boot", boot); err != nil {
			return nil, fmt.Errorf("boot partition: %w (the appliance may not boot until it is rewritten; run the update again)", err)
		}
	}
	if _, err := c.step(ctx, "POST", "testboot", nil); err != nil {
		return nil, err
	}
	logf("test-booting %s once", to)
	rebooted := time.Now()
	if err := c.Reboot(ctx, "ncpos update: test boot of "+to); err != nil {
		return nil, err
	}

	deadline := rebooted.Add(o.Timeout)
	var healthySince time.Time
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
		s, err := c.System(ctx)
		if err != nil || !bootedSince(s, rebooted) {
			continue
		}
		if s.BuildID == sys.BuildID {
			res.Duration = time.Since(start)
			return res, fmt.Errorf("build %s did not come up healthy; the appliance returned to build %s", to, sys.BuildID)
		}
		if s.BuildID != to {
			return res, fmt.Errorf("the appliance came up with build %s, neither %s nor %s", s.BuildID, sys.BuildID, to)
		}
		if len(overridden) > 0 {
			// The new build is up: give the segments back to the policy
			// before judging them, since a relay that cuts the NIC off in
			// bypass would otherwise show its links down.
			if err := c.EndBypass(ctx, overridden); err != nil {
				logf("WARNING: could not end the update's bypass overrides: %v", err)
			}
			overridden = nil
		}
		after, err := c.Segments(ctx)
		if err == nil {
			err = Accept(before, s.Daemons, BaselineOf(after))
		}
		if err != nil {
			healthySince = time.Time{}
			logf("build %s is up but not accepted yet: %v", to, err)
			continue
		}
		if healthySince.IsZero() {
			healthySince = time.Now()
			logf("build %s is live and its segments forward as before; waiting %v before making it permanent", to, o.Settle)
		}
		if time.Since(healthySince) >= o.Settle {
			if _, err := c.step(ctx, "POST", "switch", nil); err != nil {
				return res, fmt.Errorf("making %s permanent: %w (the next boot returns to %s)", to, err, sys.BuildID)
			}
			res.Permanent = true
			res.Duration = time.Since(start)
			logf("build %s runs and is permanent", to)
			return res, nil
		}
	}

	// The new build is up but never healthy, or never answered: a reboot
	// returns to the old root (the test boot was one-shot).
	logf("build %s did not become healthy within %v; rebooting to %s", to, o.Timeout, sys.BuildID)
	again := time.Now()
	if err := c.Reboot(ctx, "ncpos update: back to "+sys.BuildID); err != nil {
		logf("reboot request failed (%v); the watchdog will reset a hung appliance", err)
	}
	for end := time.Now().Add(o.Timeout); time.Now().Before(end); time.Sleep(time.Second) {
		if s, err := c.System(ctx); err == nil && bootedSince(s, again) && s.BuildID == sys.BuildID {
			res.Duration = time.Since(start)
			return res, fmt.Errorf("build %s did not come up healthy; the appliance returned to build %s", to, sys.BuildID)
		}
	}
	res.Duration = time.Since(start)
	return res, fmt.Errorf("build %s did not come up healthy and the appliance has not come back with %s within %v", to, sys.BuildID, o.Timeout)
}

// bootImage is the image's kernel and the boot partition an update would
// write with it: booting root booted of the disk with signature sig.
func bootImage(ctx context.Context, im *image.Image, sig uint32, booted int) (kernel, boot []byte, err error) {
	if kernel, err = im.Kernel(ctx); err != nil {
		return nil, nil, err
	}
	boot, err = image.BuildBoot(ctx, kernel, sig, booted)
	return kernel, boot, err
}

// plan is what Run would do, for a dry run.
func plan(ctx context.Context, c *Client, im *image.Image, from, to string, sig uint32, booted int, before Baseline, o Options) ([]string, error) {
	root, err := im.RootSquashfs()
	if err != nil {
		return nil, err
	}
	kernel, boot, err := bootImage(ctx, im, sig, booted)
	if err != nil {
		return nil, err
	}
	bootStep := fmt.Sprintf("write the boot partition: kernel of %d bytes, booting root %d until the switch", len(kernel), booted)
	if o.RewriteBoot {
		bootStep += " (asked for)"
	} else {
		switch diff, err := c.bootDifferences(ctx, boot); {
		case err != nil:
			bootStep += fmt.Sprintf(" (the box's could not be compared: %v)", err)
		case len(diff) == 0:
			bootStep = "leave the boot partition as it is: kernel, loaders and boot entries unchanged"
		default:
			bootStep += " (it differs in " + strings.Join(diff, ", ") + ")"
		}
	}
	inactive := partition.RootA + partition.RootB - booted
	p := []string{
		fmt.Sprintf("the appliance checked build %s's signature and age and would take it", to),
		"put every segment into bypass for the reboots (overrides removed afterwards, whatever the outcome)",
		fmt.Sprintf("write root %s (%d bytes) to the inactive root partition %d; the running root %d (build %s) stays as it is", to, len(root), inactive, booted, from),
		bootStep,
		fmt.Sprintf("test-boot %s once and keep it if its daemons are live and its segments forward as before for %v, else return to %s", to, o.Settle, from),
	}
	for _, name := range slices.Sorted(maps.Keys(before)) {
		st := before[name]
		want := "forwarding"
		if !st.Forwarding {
			want = "forwarding, or " + st.String() + " as now"
		}
		p = append(p, fmt.Sprintf("  segment %s: %s now; the new build is kept when it is %s", name, st, want))
	}
	return p, nil
}

// bootedSince says whether the snapshot comes from a boot after t.
func bootedSince(s *api.System, t time.Time) bool {
	return time.Now().Add(-time.Duration(s.UptimeSeconds * float64(time.Second))).After(t)
}
