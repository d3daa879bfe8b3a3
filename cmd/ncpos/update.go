package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/ncpos/ncpos/fleet"
	"github.com/ncpos/ncpos/image"
	"github.com/ncpos/ncpos/update"
)

func runUpdate(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("ncpos update", flag.ContinueOnError)
	var box boxFlags
	box.register(fs)
	var (
		invFile    = fs.String("inventory", "", "the host's inventory of boxes, where the update is recorded (default: ~/.config/ncpos/fleet.json)")
		img        = fs.String("image", "", "image to install (default: build one now, as ncpos build does)")
		cfgPath    = fs.String("config", "", "when building: configuration file (default: the embedded default)")
		signKey    = fs.String("sign-key", "", "when building: the key that signs the build (default: ~/.config/ncpos/signing-key.pem)")
		downgrade  = fs.Bool("downgrade", false, "let the appliance take a build older than the one it runs")
		dryRun     = fs.Bool("dry-run", false, "say what the update would change, and whether the appliance would take the build, and change nothing")
		quiet      = fs.Bool("q", false, "no progress bars")
		timeout    = fs.Duration("timeout", 5*time.Minute, "how long to wait for the new build to come up healthy")
		settle     = fs.Duration("settle", 10*time.Second, "how long the new build must stay healthy before it is made permanent")
		bootSettle = fs.Duration("boot-settle", update.DefaultBootSettle, "on an appliance that booted less than this ago, first wait (until it has been up this long) for segments that do not forward yet; 0: no wait")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if box.host == "" || fs.NArg() > 0 {
		return fmt.Errorf("usage: ncpos update -host H [-image F] [flags]")
	}
	if _, err := box.parse(); err != nil {
		return err
	}
	pw, pwPath, pin, err := box.connect()
	if err != nil {
		return err
	}
	path := *img
	if path == "" {
		tmp, err := os.MkdirTemp("", "ncpos-update-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		path = filepath.Join(tmp, "ncpos.img")
		if err := buildImage(ctx, buildOptions{config: *cfgPath, out: path, passwordFile: pwPath, signingKey: *signKey}); err != nil {
			return err
		}
	}
	im, err := image.OpenImage(path)
	if err != nil {
		return err
	}
	c := &update.Client{
		StatusURL: "https://" + box.addr() + "/",
		Password:  pw,
		TLS:       pin.TLSConfig(),
	}
	if !*quiet {
		c.Progress = os.Stderr
	}
	log.SetFlags(log.Ltime)
	res, err := update.Run(ctx, c, im, update.Options{Timeout: *timeout, Settle: *settle, BootSettle: noWaitIfZero(*bootSettle), Downgrade: *downgrade, DryRun: *dryRun, Logf: log.Printf})
	if err != nil {
		return err
	}
	if *dryRun {
		fmt.Printf("dry run: an update of %s from %s to %s would\n", box.shown(), res.From, res.To)
		for _, l := range res.Plan {
			fmt.Println("  " + l)
		}
		return nil
	}
	fmt.Printf("updated %s from %s to %s in %v\n", box.shown(), res.From, res.To, res.Duration.Round(time.Second))
	if _, err := recordBox(ctx, *invFile, box.known, box.name(), box.addr(), box.fingerprint, func(b *fleet.Box) { b.Updated = time.Now() }); err != nil {
		log.Printf("the update is done, but recording it in the inventory failed: %v", err)
	}
	return nil
}

// noWaitIfZero turns the flag's 0 (no wait) into update.Options' word for
// it, where 0 means the default.
func noWaitIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
