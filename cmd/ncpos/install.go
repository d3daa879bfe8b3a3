package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ncpos/ncpos/image"
	"github.com/ncpos/ncpos/install"
)

// runInstall is `ncpos install [-image F] [-yes] [-file] [-wipe-perm] [DEVICE]`.
// The checks and the writing live in package install; this only parses
// flags, builds the image when none is given (through buildImage, the same
// path as `ncpos build`) and prints.
func runInstall(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("ncpos install", flag.ContinueOnError)
	var (
		img     = fs.String("image", "", "image file to write (default: build one now, as ncpos build does)")
		yes     = fs.Bool("yes", false, "write without asking")
		file    = fs.Bool("file", false, "allow DEVICE to be a regular file (for tests)")
		wipe    = fs.Bool("wipe-perm", false, "also overwrite /perm, erasing the target's configuration and records")
		cfgPath = fs.String("config", "", "when building: configuration file (default: the embedded default)")
		size    = fs.String("size", "512M", "when building: disk size, as for ncpos build")
		pwFile  = fs.String("password-file", "", "when building: gokrazy's HTTP password file, as for ncpos build")
	)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: ncpos install [flags] [DEVICE]\n\nWithout DEVICE, lists the disks one could install onto.\n\n")
		fs.PrintDefaults()
	}
	// Accept flags after DEVICE too (ncpos install /dev/sdb -yes).
	var pos []string
	for {
		if err := fs.Parse(args); err == flag.ErrHelp {
			return nil
		} else if err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	if len(pos) == 0 {
		disks, err := install.ListDisks("/")
		if err != nil {
			return err
		}
		if err := install.PrintDisks(os.Stdout, disks); err != nil {
			return err
		}
		fmt.Println("\nRun ncpos install DEVICE to write onto one of the eligible disks.")
		return nil
	}
	if len(pos) > 1 {
		return fmt.Errorf("one DEVICE, please; got %q", pos)
	}
	dev := pos[0]

	if *img == "" {
		sz, err := image.ParseSize(*size)
		if err != nil {
			return err
		}
		l, err := image.NewLayout(sz)
		if err != nil {
			return err
		}
		// Refuse an impossible target before spending time on a build.
		if _, err := install.Check("/", dev, *file, l.Size); err != nil {
			return err
		}
		dir, err := os.MkdirTemp("", "ncpos-install-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*img = filepath.Join(dir, "ncpos.img")
		if err := buildImage(ctx, buildOptions{config: *cfgPath, size: *size, out: *img, passwordFile: *pwFile}); err != nil {
			return fmt.Errorf("building the image: %w", err)
		}
	}

	res, err := install.Install(ctx, install.Options{
		Image:       *img,
		Target:      dev,
		AllowFile:   *file,
		WipePerm:    *wipe,
		Yes:         *yes,
		Confirm:     install.TerminalConfirm(os.Stdin, os.Stderr),
		Out:         os.Stderr,
		ProgressBar: true,
	})
	if err != nil {
		return err
	}
	fmt.Print(res)
	return nil
}
