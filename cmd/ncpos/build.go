package main

import (
	"context"
	"crypto/ed25519"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/image"
	"github.com/ncpos/ncpos/image/kernel"
	"github.com/ncpos/ncpos/signature"
)

func runBuild(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("ncpos build", flag.ContinueOnError)
	var (
		cfgPath = fs.String("config", "", "configuration file (default: the embedded default)")
		size    = fs.String("size", "512M", "disk size: 512M (a 512 MB CF card), 1G, … (decimal, as cards are sold)")
		out     = fs.String("o", "ncpos.img", "image file to write")
		buildID = fs.String("build-id", "", "build ID shown by the appliance (default: from the time)")
		pwFile  = fs.String("password-file", "", "file whose first line is the control password to give the image (default: a new random one, recorded in ~/.config/ncpos/passwords/<build ID>)")
		signKey = fs.String("sign-key", "", "Ed25519 key (PKCS #8 PEM) that signs the build (default: ~/.config/ncpos/signing-key.pem, created on first use)")
		trust   = fs.String("trust", "", "file of further keys the appliance takes updates from, one \"ncpos-ed25519 <base64>\" per line (the signing key's is always trusted)")
		secVer  = fs.Uint64("security-version", 0, "the build's anti-rollback index: boxes refuse builds below the highest they made permanent, even as a downgrade (default: the highest this host has built with, ~/.config/ncpos/security-version; never lower)")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var asked *uint64
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "security-version" {
			asked = secVer
		}
	})
	return buildImage(ctx, buildOptions{config: *cfgPath, size: *size, out: *out, buildID: *buildID, passwordFile: *pwFile,
		signingKey: *signKey, trustFile: *trust, securityVersion: asked})
}

// buildOptions are what `ncpos build` takes, and what install and update
// pass when they build the image they write.
type buildOptions struct {
	config       string // "": the embedded default
	size         string // "": 512M
	out          string
	buildID      string // "": from the time
	passwordFile string // "": a new random password, recorded on the host
	signingKey   string // "": ~/.config/ncpos/signing-key.pem, created on first use
	trustFile    string // "": only the signing key is trusted
	// securityVersion nil: the highest the host has used (as when
	// install and update build the image they write).
	securityVersion *uint64
}

// signingKey reads the build host's signing key, creating the default one
// on first use, and the keys the image is to trust besides.
func signingKey(path, trustFile string) (ed25519.PrivateKey, []ed25519.PublicKey, error) {
	var (
		key     ed25519.PrivateKey
		created bool
		err     error
	)
	if path != "" {
		key, err = signature.LoadKey(path)
	} else {
		dir, derr := os.UserConfigDir()
		if derr != nil {
			return nil, nil, derr
		}
		path = filepath.Join(dir, "ncpos", "signing-key.pem")
		key, created, err = signature.LoadOrCreateKey(path)
	}
	if err != nil {
		return nil, nil, err
	}
	if created {
		log.Printf("created the signing key %s: images built here trust it; keep it, or boxes refuse this host's updates", path)
	}
	var trusted []ed25519.PublicKey
	if trustFile != "" {
		text, err := os.ReadFile(trustFile)
		if err != nil {
			return nil, nil, fmt.Errorf("trusted keys: %w", err)
		}
		if trusted, err = signature.ParseKeys(text); err != nil {
			return nil, nil, fmt.Errorf("trusted keys %s: %w", trustFile, err)
		}
	}
	return key, trusted, nil
}

// buildImage builds an image as `ncpos build` does.
func buildImage(ctx context.Context, o buildOptions) error {
	if o.size == "" {
		o.size = "512M"
	}
	sz, err := image.ParseSize(o.size)
	if err != nil {
		return err
	}
	var (
		cfg  *config.Config
		text []byte
	)
	if o.config == "" {
		cfg, text = config.Default(), config.DefaultTOML()
	} else {
		if text, err = os.ReadFile(o.config); err != nil {
			return err
		}
		if cfg, err = config.Parse(o.config, text); err != nil {
			return fmt.Errorf("invalid configuration, no image written:\n%w", err)
		}
	}
	id := o.buildID
	if id == "" {
		id = time.Now().UTC().Format("20060102-150405")
	}
	key, trusted, err := signingKey(o.signingKey, o.trustFile)
	if err != nil {
		return err
	}
	svFile, err := securityVersionFile()
	if err != nil {
		return err
	}
	sv, err := securityVersion(svFile, o.securityVersion)
	if err != nil {
		return err
	}
	pw, pwPath, err := controlPassword(o.passwordFile, id)
	if err != nil {
		return err
	}
	log.SetFlags(0)
	res, err := image.Build(ctx, image.Options{
		Config:          cfg,
		ConfigTOML:      text,
		Kernel:          kernel.BzImage(),
		Size:            sz,
		Output:          o.out,
		BuildID:         id,
		ControlPassword: pw,
		SigningKey:      key,
		TrustedKeys:     trusted,
		SecurityVersion: sv,
		Logf:            func(f string, a ...any) { log.Printf("  "+f, a...) },
	})
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s: build %s, kernel %s\n", res.Output, res.BuildID, kernel.Release())
	fmt.Printf("  image %d bytes (%d MiB), %d bytes allocated; root squashfs %d bytes\n",
		res.Size, res.Size>>20, res.BytesUsed, res.RootBytes)
	fmt.Printf("  built in %v; control password (user ncpos) in %s\n", res.Duration.Round(time.Millisecond), pwPath)
	fmt.Printf("  signed by %s, security version %d\n", signature.FormatKey(key.Public().(ed25519.PublicKey)), sv)
	return nil
}

// controlPassword is the given file's password, or else a new one for this
// image, recorded on the host.
func controlPassword(file, buildID string) (pw, path string, err error) {
	if file != "" {
		pw, err := image.ReadPassword(file)
		return pw, file, err
	}
	return image.NewControlPassword("", buildID)
}
