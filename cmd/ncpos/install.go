package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ncpos/ncpos/fleet"
	"github.com/ncpos/ncpos/image"
	"github.com/ncpos/ncpos/install"
	"github.com/ncpos/ncpos/passwd"
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
		pwFile  = fs.String("password-file", "", "when building: the control password file, as for ncpos build (default: a new one for the image)")
		invFile = fs.String("inventory", "", "the host's inventory of boxes, where the card is recorded under -name (default: ~/.config/ncpos/fleet.json)")
		name    = fs.String("name", "", "the box's name, as later given to ncpos update -host: its new control password is recorded under it (default: the device's name and the time)")
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

	box := *name
	if box == "" {
		box = filepath.Base(dev) + "-" + time.Now().Format("20060102-150405")
	}
	prov := &provisioner{box: box}
	defer prov.cleanup()
	res, err := install.Install(ctx, install.Options{
		Image:       *img,
		Target:      dev,
		AllowFile:   *file,
		WipePerm:    *wipe,
		Yes:         *yes,
		Confirm:     install.TerminalConfirm(os.Stdin, os.Stderr),
		Out:         os.Stderr,
		ProgressBar: true,
		Perm:        func(size int64) (io.ReaderAt, error) { return prov.perm(ctx, size) },
	})
	var we *install.WriteError
	if errors.As(err, &we) && prov.file != "" && (we.Phase != "writing" || we.Done >= we.Total) {
		// Everything reached the card, the new /perm too: its password
		// is the one recorded, whatever went wrong after.
		return fmt.Errorf("%w\n(the card's new /perm holds the control password recorded in %s)", err, prov.file)
	}
	if err != nil {
		prov.forget()
		return err
	}
	fmt.Print(res)
	if err := recordInstall(*invFile, box); err != nil {
		fmt.Printf("  (recording %s in the inventory failed: %v)\n", box, err)
	}
	if res.FreshPerm {
		fmt.Printf("  control password of %s (user ncpos): in %s\n", box, prov.file)
	} else {
		prov.forget()
		fmt.Printf("  control password: the one its kept /perm holds\n")
	}
	return nil
}

// provisioner gives a card a /perm of its own: a new control password,
// recorded on the host under the box's name before anything is written
// (a crash after the write cannot lose it), and forgotten again when the
// card does not get it.
type provisioner struct {
	box, file, tmp string
	f              *os.File
}

func (p *provisioner) perm(ctx context.Context, size int64) (io.ReaderAt, error) {
	pw, file, err := image.NewControlPassword("", p.box)
	if err != nil {
		return nil, err
	}
	p.file = file
	hash, err := passwd.Hash(pw)
	if err != nil {
		return nil, err
	}
	if p.tmp, err = os.MkdirTemp("", "ncpos-perm-"); err != nil {
		return nil, err
	}
	path, err := image.FreshPerm(ctx, p.tmp, size, hash)
	if err != nil {
		return nil, err
	}
	p.f, err = os.Open(path)
	return p.f, err
}

// forget removes the record of a password no card holds.
func (p *provisioner) forget() {
	if p.file != "" {
		os.Remove(p.file)
		p.file = ""
	}
}

func (p *provisioner) cleanup() {
	if p.f != nil {
		p.f.Close()
	}
	if p.tmp != "" {
		os.RemoveAll(p.tmp)
	}
}

// recordInstall adds the card's box to the host's inventory; its address
// and key are recorded when a host command first reaches it.
func recordInstall(inventory, box string) error {
	inv, err := (&fleetFlags{inventory: inventory}).open()
	if err != nil {
		return err
	}
	return inv.Update(box, func(b *fleet.Box) { b.Installed = time.Now() })
}
