package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/image"
	"github.com/ncpos/ncpos/image/kernel"
)

func runBuild(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("ncpos build", flag.ContinueOnError)
	var (
		cfgPath = fs.String("config", "", "configuration file (default: the embedded default)")
		size    = fs.String("size", "512M", "disk size: 512M (a 512 MB CF card), 1G, … (decimal, as cards are sold)")
		out     = fs.String("o", "ncpos.img", "image file to write")
		buildID = fs.String("build-id", "", "build ID shown by the appliance (default: from the time)")
		pwFile  = fs.String("password-file", "", "file with gokrazy's HTTP password (default: ~/.config/ncpos/http-password.txt, created when missing)")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	sz, err := image.ParseSize(*size)
	if err != nil {
		return err
	}
	var (
		cfg  *config.Config
		text []byte
	)
	if *cfgPath == "" {
		cfg, text = config.Default(), config.DefaultTOML()
	} else {
		if text, err = os.ReadFile(*cfgPath); err != nil {
			return err
		}
		if cfg, err = config.Parse(*cfgPath, text); err != nil {
			return fmt.Errorf("invalid configuration, no image written:\n%w", err)
		}
	}
	pw, pwPath, err := image.EnsurePassword(*pwFile)
	if err != nil {
		return err
	}
	id := *buildID
	if id == "" {
		id = time.Now().UTC().Format("20060102-150405")
	}
	log.SetFlags(0)
	res, err := image.Build(ctx, image.Options{
		Config:     cfg,
		ConfigTOML: text,
		Kernel:     kernel.BzImage(),
		Size:       sz,
		Output:     *out,
		BuildID:    id,
		Password:   pw,
		HTTPPort:   config.GokrazyHTTPPort,
		Logf:       func(f string, a ...any) { log.Printf("  "+f, a...) },
	})
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s: build %s, kernel %s\n", res.Output, res.BuildID, kernel.Release())
	fmt.Printf("  image %d bytes (%d MiB), %d bytes allocated; root squashfs %d bytes\n",
		res.Size, res.Size>>20, res.BytesUsed, res.RootBytes)
	fmt.Printf("  built in %v; gokrazy password in %s\n", res.Duration.Round(time.Millisecond), pwPath)
	return nil
}
