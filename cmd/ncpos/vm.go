package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/ncpos/ncpos/config"

	"github.com/ncpos/ncpos/vm"
)

func runVM(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("ncpos vm", flag.ContinueOnError)
	var (
		uefi       = fs.Bool("uefi", false, "boot with UEFI firmware (OVMF) instead of legacy BIOS (SeaBIOS)")
		statusPort = fs.Int("status-port", 8480, "localhost port forwarded to the appliance's status page (HTTPS)")
		httpPort   = fs.Int("http-port", 8488, "localhost port forwarded to the appliance's plain HTTP, which redirects to HTTPS")
		serialLog  = fs.String("serial-log", "", "write the serial console to this file instead of the terminal")
		nics       = fs.Int("data-nics", 4, "data NICs (LAN1…)")
		snapshot   = fs.Bool("snapshot", false, "discard writes to the image when QEMU exits")
		cable      = fs.String("cable", "", "join data ports pairwise like patch cables, e.g. LAN3=LAN1,LAN4=LAN2")
		cfgFile    = fs.String("config", "", "cable the data ports as this configuration's [selftest] ports say (the file the image was built from)")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: ncpos vm [flags] IMAGE")
	}
	cables, err := vm.ParseCables(*cable)
	if err != nil {
		return fmt.Errorf("-cable: %w", err)
	}
	if *cfgFile != "" {
		cfg, err := config.Load(*cfgFile)
		if err != nil {
			return err
		}
		more, err := selfTestCables(cfg)
		if err != nil {
			return fmt.Errorf("-config %s: %w", *cfgFile, err)
		}
		cables = append(cables, more...)
	}
	v, err := vm.Start(ctx, vm.Options{
		Image: fs.Arg(0), UEFI: *uefi, DataNICs: *nics, Cables: cables,
		StatusPort: *statusPort, HTTPPort: *httpPort,
		SerialLog: *serialLog, Snapshot: *snapshot,
	}, os.Stderr)
	if err != nil {
		return err
	}
	for _, c := range cables {
		fmt.Fprintf(os.Stderr, "ncpos vm: cable %s\n", c)
	}
	fw := "legacy BIOS (SeaBIOS)"
	if *uefi {
		fw = "UEFI (OVMF)"
	}
	fmt.Fprintf(os.Stderr, "ncpos vm: booting %s with %s; status page at %s (its TLS key is announced on the serial console)\n",
		fs.Arg(0), fw, v.StatusURL())
	fmt.Fprintf(os.Stderr, "ncpos vm: host commands reach it with -host 127.0.0.1:%d (and the password file ncpos build named), e.g. ncpos config get -host 127.0.0.1:%d -password-file FILE\n",
		*statusPort, *statusPort)
	if *serialLog == "" {
		fmt.Fprintf(os.Stderr, "ncpos vm: serial console below; quit with Ctrl-a x\n")
	}
	return v.Wait()
}

// selfTestCables are the cables of cfg's [selftest]: each test port
// joined to the segment port it measures through.
func selfTestCables(cfg *config.Config) ([]vm.Cable, error) {
	if cfg.Platform != "qemu" {
		return nil, fmt.Errorf("platform %q: the VM is the qemu platform, whose ports it cables", cfg.Platform)
	}
	var spec []string
	for _, c := range cfg.SelfTest.Ports {
		spec = append(spec, c.Test+"="+c.SegmentPort)
	}
	if len(spec) == 0 {
		return nil, fmt.Errorf("[selftest] cables no port")
	}
	return vm.ParseCables(strings.Join(spec, ","))
}
