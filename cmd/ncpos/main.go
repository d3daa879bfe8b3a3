// Command ncpos is the host side of ncpos: it builds images, boots them in
// QEMU, installs them onto cards and disks, updates running boxes and reads
// and checks their configuration, and runs the namespace lab and the RFC
// 2544 bench.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

var commands = map[string]struct {
	run     func(ctx context.Context, args []string) error
	summary string
}{
	"build":   {runBuild, "build an appliance image from the embedded default or a given configuration"},
	"vm":      {runVM, "boot an image in QEMU with NICs, watchdog and serial console"},
	"update":  {runUpdate, "update a running appliance over the network (test boot, then permanent)"},
	"install": {runInstall, "write an image onto a USB stick, CF card or DOM (keeps its /perm)"},
	"lab":     {runLab, "network-namespace lab: up, down, failover (needs root)"},
	"bench":   {runBench, "RFC 2544 self-test in the lab (throughput, latency, loss, back-to-back), or -compare: the lab's setups side by side"},
	"config":  {runConfig, "a box's configuration: get, check, plan, apply with confirm, roll back, history"},
	"fleet":   {runFleet, "the boxes this host has installed and updated: list, status, Prometheus service discovery"},
	"capture": {runCapture, "capture a box's segment port at the XDP hook into a pcapng file, or to standard output for Wireshark"},
	"user":    {runUser, "a box's accounts: list, add, remove, role, passwd, disable, enable"},
	"token":   {runToken, "a box's API tokens for automation and Prometheus: create, list, revoke"},
}

func usage() {
	fmt.Fprintf(os.Stderr, "usage: ncpos <command> [flags]\n\ncommands:\n")
	for _, name := range []string{"build", "vm", "install", "update", "config", "capture", "user", "token", "fleet", "lab", "bench"} {
		fmt.Fprintf(os.Stderr, "  %-8s %s\n", name, commands[name].summary)
	}
	fmt.Fprintf(os.Stderr, "\nRun ncpos <command> -h for its flags.\n")
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	c, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "ncpos: unknown command %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := c.run(ctx, os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "ncpos %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
