package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ncpos/ncpos/boxaddr"
	"github.com/ncpos/ncpos/fleet"
	"github.com/ncpos/ncpos/image"
)

const fleetUsage = `usage: ncpos fleet <command> [flags]

commands:
  list     the boxes in the inventory: name, address, key, build, when installed, updated, seen
  status   ask every box at once: reachable, build, health, segments and their relays, last reset
  add      add a box by its address (pins its key, as ncpos update does) or refresh one
  remove   take a box out of the inventory
  sd       write Prometheus file-based service discovery for every box (targets and CA file)
  config   config apply: one configuration to every box, in waves, each change confirmed once the box runs it well

ncpos install and ncpos update add the boxes they deal with.`

func runFleet(ctx context.Context, args []string) error {
	if len(args) == 0 {
		//lint:ignore ST1005 the usage text is shown as it is written, full stop included
		return errors.New(fleetUsage)
	}
	sub := map[string]func(context.Context, *fleetFlags, []string) error{
		"list": fleetList, "status": fleetStatus, "add": fleetAdd, "remove": fleetRemove, "sd": fleetSD, "config": fleetConfig,
	}[args[0]]
	if sub == nil {
		return fmt.Errorf("unknown fleet command %q\n%s", args[0], fleetUsage)
	}
	fs := flag.NewFlagSet("ncpos fleet "+args[0], flag.ContinueOnError)
	ff := &fleetFlags{fs: fs}
	fs.StringVar(&ff.inventory, "inventory", "", "the inventory file (default: ~/.config/ncpos/fleet.json)")
	fs.StringVar(&ff.known, "known", "", "file of pinned boxes (default: ~/.config/ncpos/known_boxes)")
	return sub(ctx, ff, args[1:])
}

type fleetFlags struct {
	fs               *flag.FlagSet
	inventory, known string
}

func (ff *fleetFlags) open() (*fleet.Inventory, error) {
	if ff.inventory != "" {
		return &fleet.Inventory{Path: ff.inventory}, nil
	}
	return fleet.Default()
}

// boxes are the inventory's boxes.
func (ff *fleetFlags) boxes() ([]fleet.Box, error) {
	inv, err := ff.open()
	if err != nil {
		return nil, err
	}
	return inv.Boxes()
}

// asker reaches boxes as the other host commands do: their pinned key
// and their recorded control password.
func (ff *fleetFlags) asker(fingerprint string) *fleet.Asker {
	return &fleet.Asker{
		TLS: func(b fleet.Box) *tls.Config {
			pin, err := newPin(b.Name, fingerprint, ff.known)
			if err != nil {
				return &tls.Config{VerifyConnection: func(tls.ConnectionState) error { return err }, InsecureSkipVerify: true}
			}
			return pin.TLSConfig()
		},
		Password: recordedPassword,
	}
}

// recordedPassword is the control password the host recorded for b, or ""
// (a box without auth_read answers without one).
func recordedPassword(b fleet.Box) string {
	dir, err := image.PasswordDir()
	if err != nil {
		return ""
	}
	pw, err := image.ReadPassword(filepath.Join(dir, b.Name))
	if err != nil {
		return ""
	}
	return pw
}

// recordBox asks the box at address for its status under its pinned key
// and records what it proved in the inventory; change adds what the
// calling command knows (an update's time).
func recordBox(ctx context.Context, inventory, known, name, address, fingerprint string, change func(*fleet.Box)) (fleet.Report, error) {
	ff := &fleetFlags{inventory: inventory, known: known}
	inv, err := ff.open()
	if err != nil {
		return fleet.Report{}, err
	}
	r, cs := ff.asker(fingerprint).Check(ctx, fleet.Box{Name: name, Address: address})
	if !r.Reachable {
		return r, fmt.Errorf("%s at %s: %s", name, address, r.Error)
	}
	err = inv.Update(name, func(b *fleet.Box) {
		b.Address = address
		fleet.Saw(b, r.Build, cs, time.Now())
		if change != nil {
			change(b)
		}
	})
	return r, err
}

func fleetAdd(ctx context.Context, ff *fleetFlags, args []string) error {
	name := ff.fs.String("name", "", "the box's name, as ncpos update -host knows it (default: the address's host)")
	addr := ff.fs.String("address", "", "host, host:port or [IPv6]:port of the box's HTTPS status port (port 443 if none), required")
	fpr := ff.fs.String("fingerprint", "", "the box's TLS key as its console or dashboard shows it (sha256:…); default: the one pinned, or pin it now")
	if err := ff.fs.Parse(args); err != nil {
		return err
	}
	if *addr == "" || ff.fs.NArg() > 0 {
		return errors.New("usage: ncpos fleet add -address HOST[:PORT] [-name N] [-fingerprint sha256:…]")
	}
	parsed, err := boxaddr.Parse(*addr, 443)
	if err != nil {
		return fmt.Errorf("-address: %w", err)
	}
	a := parsed.String()
	if *name == "" {
		*name = parsed.Host
	}
	r, err := recordBox(ctx, ff.inventory, ff.known, *name, a, *fpr, nil)
	if err != nil {
		return err
	}
	fmt.Printf("%s at %s: build %s, %s\n", *name, a, r.Build, r.Health)
	return nil
}

func fleetRemove(ctx context.Context, ff *fleetFlags, args []string) error {
	if err := ff.fs.Parse(args); err != nil {
		return err
	}
	if ff.fs.NArg() != 1 {
		return errors.New("usage: ncpos fleet remove NAME")
	}
	inv, err := ff.open()
	if err != nil {
		return err
	}
	return inv.Remove(ff.fs.Arg(0))
}

func fleetList(ctx context.Context, ff *fleetFlags, args []string) error {
	if err := ff.fs.Parse(args); err != nil {
		return err
	}
	boxes, err := ff.boxes()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BOX\tADDRESS\tKEY\tBUILD\tINSTALLED\tUPDATED\tSEEN")
	for _, b := range boxes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", b.Name, orDash(b.Address), orDash(shortKey(b.Fingerprint)), orDash(b.Build),
			when(b.Installed), when(b.Updated), when(b.Seen))
	}
	return tw.Flush()
}

func fleetStatus(ctx context.Context, ff *fleetFlags, args []string) error {
	asJSON := ff.fs.Bool("json", false, "print the reports as JSON")
	if err := ff.fs.Parse(args); err != nil {
		return err
	}
	inv, err := ff.open()
	if err != nil {
		return err
	}
	reports, err := ff.asker("").Status(ctx, inv)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reports); err != nil {
			return err
		}
	} else if err := printStatus(os.Stdout, reports); err != nil {
		return err
	}
	down := 0
	for _, r := range reports {
		if !r.Reachable {
			down++
		}
	}
	if down > 0 {
		return fmt.Errorf("%d of %d boxes not reachable", down, len(reports))
	}
	return nil
}

// printStatus writes one line per box.
func printStatus(w io.Writer, reports []fleet.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BOX\tADDRESS\tREACHABLE\tBUILD\tHEALTH\tSEGMENTS\tLAST RESET")
	for _, r := range reports {
		if !r.Reachable {
			fmt.Fprintf(tw, "%s\t%s\tno: %s\t%s\t-\t-\t-\n", r.Box.Name, orDash(r.Box.Address), r.Error, orDash(r.Box.Build))
			continue
		}
		var segs []string
		for _, s := range r.Segments {
			state := "forwarding"
			if !s.Forwarding {
				state = "not forwarding"
			}
			if s.Relay != "" {
				state += ", relay " + s.Relay
			}
			segs = append(segs, s.Name+" ("+state+")")
		}
		health := r.Health
		if len(r.Problems) > 0 {
			health += ": " + strings.Join(r.Problems, "; ")
		}
		fmt.Fprintf(tw, "%s\t%s\tyes, up %v\t%s\t%s\t%s\t%s\n", r.Box.Name, r.Box.Address, r.Uptime.Round(time.Second), r.Build, health,
			orDash(strings.Join(segs, ", ")), orDash(r.LastReset))
	}
	return tw.Flush()
}

func fleetSD(ctx context.Context, ff *fleetFlags, args []string) error {
	dir := ff.fs.String("dir", "", "folder Prometheus reads the targets and CA file from, required")
	if err := ff.fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || ff.fs.NArg() > 0 {
		return errors.New("usage: ncpos fleet sd -dir DIR")
	}
	inv, err := ff.open()
	if err != nil {
		return err
	}
	ex, err := fleet.ExportSD(inv, *dir)
	if err != nil {
		return err
	}
	fmt.Printf("%d boxes in %s, their certificates in %s\n", ex.Boxes, ex.Targets, ex.CA)
	for _, s := range ex.Skipped {
		fmt.Printf("  left out: %s\n", s)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func shortKey(fp string) string {
	if len(fp) > len("sha256:")+16 {
		return fp[:len("sha256:")+16] + "…"
	}
	return fp
}

func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04")
}
