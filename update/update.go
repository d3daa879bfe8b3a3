package update

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ncpos/ncpos/bootpart"
	"github.com/ncpos/ncpos/boxtls"
	"github.com/ncpos/ncpos/partition"
	"github.com/ncpos/ncpos/signature"
	"github.com/ncpos/ncpos/web/api"
	"github.com/ncpos/ncpos/web/verdict"
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
	// Lease is how long the update's bypass overrides outlast the
	// client's last renewal of them (0: DefaultLease).
	Lease time.Duration
	// BootSettle: on a box that booted less than this ago, the update
	// first waits, until the box has been up this long, for segments that
	// do not forward yet (0: DefaultBootSettle; negative: no wait).
	BootSettle time.Duration
	Logf       func(format string, args ...any)
}

// Result says how an update ended.
type Result struct {
	From, To  string // build IDs
	Permanent bool   // the new build runs and will boot from now on
	// BootKept: the inactive slot held the new build's kernel already, so
	// nothing was written to the boot partition.
	BootKept bool
	Duration time.Duration
	// Plan is what a dry run would do, line by line.
	Plan []string
	// Leftovers are the segments whose overrides of an earlier update
	// (its client died) this one ended first; Before is every segment's
	// state the new build was held to.
	Leftovers []string
	Before    verdict.Baseline
}

// Image is the build an update installs, as read from its disk image
// (the builder's image.Image is one). An update reads a build through
// these alone, whatever made it.
type Image interface {
	// BuildID is the build the image holds.
	BuildID() (string, error)
	// Manifest is the build's signed manifest.
	Manifest(ctx context.Context) ([]byte, error)
	// RootSquashfs is its root file system.
	RootSquashfs() ([]byte, error)
	// Kernel is its kernel.
	Kernel(ctx context.Context) ([]byte, error)
	// BootHashes hashes the files of the boot partition the build would
	// give a box with disk signature diskSig booting root partition
	// rootPart, with kernel (Kernel's) in its slots, as bootpart.HashTree
	// hashes the box's own.
	BootHashes(ctx context.Context, kernel []byte, diskSig uint32, rootPart int) (map[string]string, error)
}

// Run updates the appliance behind c to the image im. The box checks the
// build's signature, then writes the new root to the inactive partition
// and the new kernel to the inactive slot of its boot partition itself,
// each received in full and checked first; it sets its loader to boot
// that slot (kernel and root) once, reboots, and makes the slot permanent
// only once the new build has been healthy for Settle. If it does not
// come up healthy, the next boot (a reboot the command asks for, the
// watchdog's, or a kernel's panic) returns to the old slot, and Run says
// so in its error.
func Run(ctx context.Context, c *Client, im Image, o Options) (*Result, error) {
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
	if o.Lease == 0 {
		o.Lease = DefaultLease
	}
	if o.BootSettle == 0 {
		o.BootSettle = DefaultBootSettle
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
	bootedAt := bootTime(sys)
	sig, booted, err := bootpart.Root(sys.Cmdline)
	if err != nil {
		return nil, err
	}
	bp, err := c.BootPartition(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the appliance's boot partition: %w", err)
	}
	if bp.Slots == nil {
		return nil, fmt.Errorf("the appliance's build %s keeps one kernel for both roots: it predates the kernel per root this update needs; install this build instead", sys.BuildID)
	}
	if bp.Slots.TestBoot() {
		return nil, fmt.Errorf("the appliance test-boots slot %s (it boots slot %s by default); let that update finish or reboot it first", bp.Slots.Running, bp.Slots.Default)
	}
	to, err := im.BuildID()
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
	leftovers := Leftovers(segs)
	if len(leftovers) > 0 && !o.DryRun {
		if segs, err = c.endLeftovers(ctx, leftovers, leftoverPatience, logf); err != nil {
			return nil, err
		}
	}
	if !o.DryRun {
		if segs, err = c.settledSegments(ctx, segs, bootedAt, o.BootSettle, logf); err != nil {
			return nil, err
		}
	}
	before := verdict.BaselineOf(segs)
	res.Leftovers, res.Before = leftovers, before
	if o.DryRun {
		res.Plan, err = plan(ctx, im, sys.BuildID, to, sig, booted, bp, segs, leftovers, time.Since(bootedAt), o)
		res.Duration = time.Since(start)
		return res, err
	}
	for name, st := range before {
		logf("before the update: segment %s %s", name, st)
	}

	reason := "ncpos update to " + to
	overridden, held, err := c.Bypass(ctx, reason, o.Lease)
	if err != nil {
		logf("WARNING: could not put the segments into bypass (%v); traffic may stop during the reboot", err)
	}
	for _, name := range slices.Sorted(maps.Keys(held)) {
		h := held[name]
		logf("segment %s stays %s by the override of %s (%s): the update leaves it as it is", name, h.State, h.By, h.Reason)
	}
	// The overrides are kept on /perm across the reboot, for a lease the
	// client renews while it runs; whatever the outcome, they go once the
	// update is over, and a client that dies leaves them to expire.
	stopRenew := c.RenewBypass(ctx, overridden, reason, o.Lease, logf)
	defer func() {
		stopRenew()
		if err := c.EndBypass(context.WithoutCancel(ctx), overridden); err != nil {
			logf("WARNING: could not end the update's bypass overrides (%v); they expire by themselves within %v", err, o.Lease)
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
	bpl, err := planBoot(ctx, im, sig, booted, bp)
	if err != nil {
		return nil, err
	}
	if len(bpl.loaders) > 0 {
		logf("WARNING: the new build's loaders or entries differ from the appliance's in %s; they are not written over the network (install the build to change them)", strings.Join(bpl.loaders, ", "))
	}
	if bpl.kept {
		logf("slot %s holds the new build's kernel already: nothing is written to the boot partition", bpl.slot)
		res.BootKept = true
	} else {
		logf("sending the kernel (%d bytes) for slot %s", len(bpl.kernel), bpl.slot)
		said, err := c.step(ctx, "PUT", "kernel", bpl.kernel)
		if err != nil {
			return nil, fmt.Errorf("kernel: %w (the appliance still runs %s; its running slot %s is untouched)", err, sys.BuildID, bp.Slots.Running)
		}
		logf("appliance: %s", strings.TrimSpace(said))
	}
	said, err = c.step(ctx, "POST", "testboot", nil)
	if err != nil {
		return nil, err
	}
	logf("appliance: %s", strings.TrimSpace(said))
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
			stopRenew()
			if err := c.EndBypass(ctx, overridden); err != nil {
				logf("WARNING: could not end the update's bypass overrides: %v", err)
			}
			overridden = nil
		}
		after, err := c.Segments(ctx)
		if err == nil {
			err = verdict.Accept(before, s.Daemons, verdict.BaselineOf(after))
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

// bootPlan is what an update changes on the boot partition.
type bootPlan struct {
	kernel []byte
	slot   bootpart.Slot // the inactive slot, the new build's
	kept   bool          // the slot holds the kernel already
	// loaders are the loader and entry files the new build has
	// otherwise, which the box does not write over the network.
	loaders []string
}

// planBoot compares the image's kernel and loaders with the box's boot
// partition bp (disk signature sig, booting root booted).
func planBoot(ctx context.Context, im Image, sig uint32, booted int, bp *BootPartition) (*bootPlan, error) {
	kernel, err := im.Kernel(ctx)
	if err != nil {
		return nil, err
	}
	want, err := im.BootHashes(ctx, kernel, sig, booted)
	if err != nil {
		return nil, err
	}
	p := &bootPlan{kernel: kernel, slot: bp.Slots.Running.Other()}
	p.kept = bp.Files[p.slot.Kernel()] == signature.BlobOf(kernel).SHA256
	p.loaders = loaderDifferences(want, bp.Files)
	return p, nil
}

// leftoverPatience is how long an update waits for segments to forward
// again once it has ended an earlier update's overrides on them: the
// relay's hold-down and its links coming up.
const leftoverPatience = 90 * time.Second

// plan is what Run would do, for a dry run.
func plan(ctx context.Context, im Image, from, to string, sig uint32, booted int, bp *BootPartition, segs []api.Segment, leftovers []string, uptime time.Duration, o Options) ([]string, error) {
	root, err := im.RootSquashfs()
	if err != nil {
		return nil, err
	}
	bpl, err := planBoot(ctx, im, sig, booted, bp)
	if err != nil {
		return nil, err
	}
	bootStep := fmt.Sprintf("write the kernel (%d bytes) to slot %s of the boot partition, over its old kernel; slot %s, which runs, stays as it is", len(bpl.kernel), bpl.slot, bp.Slots.Running)
	if bpl.kept {
		bootStep = fmt.Sprintf("leave the boot partition as it is: slot %s holds the new build's kernel already", bpl.slot)
	}
	if len(bpl.loaders) > 0 {
		bootStep += "; the new build's loaders or entries differ in " + strings.Join(bpl.loaders, ", ") + " and stay as they are"
	}
	inactive := partition.RootA + partition.RootB - booted
	p := []string{
		fmt.Sprintf("the appliance checked build %s's signature and age and would take it", to),
	}
	if len(leftovers) > 0 {
		p = append(p, fmt.Sprintf("end the bypass overrides an earlier update left on %s (its client stopped) and take those segments' state once they forward again", strings.Join(leftovers, ", ")))
	}
	if waiting, left := settling(segs, uptime, o.BootSettle); len(waiting) > 0 {
		p = append(p, fmt.Sprintf("wait up to %v for %s to forward: the appliance booted %v ago and may still be bringing its segments up", left.Round(time.Second), segmentNames(waiting), uptime.Round(time.Second)))
	}
	p = append(p,
		fmt.Sprintf("put every segment into bypass for the reboots, but those an operator holds by an override of their own (overrides removed afterwards, whatever the outcome; renewed for %v at a time, so they expire if this command dies)", o.Lease),
		fmt.Sprintf("write root %s (%d bytes) to the inactive root partition %d; the running root %d (build %s) stays as it is", to, len(root), inactive, booted, from),
		bootStep,
		fmt.Sprintf("test-boot %s once from slot %s (its kernel and root) and keep it if its daemons are live and its segments forward as before for %v, else return to %s on slot %s", to, bpl.slot, o.Settle, from, bp.Slots.Running),
	)
	before := verdict.BaselineOf(segs)
	for _, s := range segs {
		st := before[s.Name]
		want := "forwarding"
		if !st.Forwarding {
			want = "forwarding, or " + st.String() + " as now"
		}
		line := fmt.Sprintf("  segment %s: %s now; the new build is kept when it is %s", s.Name, st, want)
		if h := operatorOverride(s); h != nil {
			line += fmt.Sprintf("; its relay stays %s by the override of %s (%s), which the update leaves as it is", h.State, h.By, h.Reason)
		}
		p = append(p, line)
	}
	return p, nil
}

// bootTime is when the box that gave the snapshot booted, by this host's
// clock.
func bootTime(s *api.System) time.Time {
	return time.Now().Add(-time.Duration(s.UptimeSeconds * float64(time.Second)))
}

// bootedSince says whether the snapshot comes from a boot after t.
func bootedSince(s *api.System, t time.Time) bool {
	return bootTime(s).After(t)
}
