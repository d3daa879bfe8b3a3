package main

import (
	"context"
	"flag"
	"fmt"
	"os"

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
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: ncpos vm [flags] IMAGE")
	}
	v, err := vm.Start(ctx, vm.Options{
		Image: fs.Arg(0), UEFI: *uefi, DataNICs: *nics,
		StatusPort: *statusPort, HTTPPort: *httpPort,
		SerialLog: *serialLog, Snapshot: *snapshot,
	}, os.Stderr)
	if err != nil {
		return err
	}
	fw := "legacy BIOS (SeaBIOS)"
	if *uefi {
		fw = "UEFI (OVMF)"
	}
	fmt.Fprintf(os.Stderr, "ncpos vm: booting %s with %s; status page at %s (its TLS key is announced on the serial console)\n",
		fs.Arg(0), fw, v.StatusURL())
	if *serialLog == "" {
		fmt.Fprintf(os.Stderr, "ncpos vm: serial console below; quit with Ctrl-a x\n")
	}
	return v.Wait()
}
