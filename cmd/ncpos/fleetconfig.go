package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ncpos/ncpos/fleet"
)

const fleetConfigUsage = "usage: ncpos fleet config apply -file F [-waves 1,25%,100%] [-confirm-within 10m] [-watch 30s] [-comment C] [-yes]"

// fleetConfig applies one configuration to every box of the inventory in
// waves, stopping at the first wave in which a box reverted or refused
// it.
func fleetConfig(ctx context.Context, ff *fleetFlags, args []string) error {
	if len(args) == 0 || args[0] != "apply" {
		return fmt.Errorf("%s", fleetConfigUsage)
	}
	file := ff.fs.String("file", "", "the ncpos.toml every box takes, required; - reads standard input")
	spec := ff.fs.String("waves", "1,25%,100%", "how many boxes have the change after each wave: counts or shares of the inventory")
	within := ff.fs.Duration("confirm-within", 10*time.Minute, "each box goes back unless its change is confirmed within this")
	watch := ff.fs.Duration("watch", 30*time.Second, "how long a wave's boxes run the change before they are confirmed (longer than the boxes' 15 s grace)")
	comment := ff.fs.String("comment", "", "why, kept in each box's history")
	yes := ff.fs.Bool("yes", false, "do not ask")
	if err := ff.fs.Parse(args[1:]); err != nil {
		return err
	}
	if ff.fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q\n%s", ff.fs.Arg(0), fleetConfigUsage)
	}
	if *within <= *watch || *within%time.Second != 0 {
		return fmt.Errorf("-confirm-within %v: want whole seconds, longer than -watch %v", *within, *watch)
	}
	text, err := readCandidate(*file)
	if err != nil {
		return err
	}
	boxes, err := ff.boxes()
	if err != nil {
		return err
	}
	if len(boxes) == 0 {
		return fmt.Errorf("no boxes in the inventory")
	}
	waves, err := fleet.Waves(*spec, len(boxes))
	if err != nil {
		return err
	}
	var plan []string
	done := 0
	for i, upTo := range waves {
		var names []string
		for _, b := range boxes[done:upTo] {
			names = append(names, b.Name)
		}
		plan = append(plan, fmt.Sprintf("  wave %d: %s", i+1, strings.Join(names, ", ")))
		done = upTo
	}
	fmt.Printf("%s to %d boxes in %d waves, each confirmed after %v unless it reverted:\n%s\n", *file, len(boxes), len(waves), *watch, strings.Join(plan, "\n"))
	o := configOpts{yes: *yes, in: os.Stdin}
	if err := o.ask("apply"); err != nil {
		return err
	}
	start := time.Now()
	a := ff.asker("")
	results, err := a.ApplyConfig(ctx, boxes, waves, fleet.ConfigChange{Text: string(text), Comment: *comment, Within: *within, Watch: *watch,
		Logf: func(format string, args ...any) { fmt.Printf(format+"\n", args...) }})
	confirmed := 0
	for _, r := range results {
		if r.State == "confirmed" || r.State == "unchanged" {
			confirmed++
		}
	}
	fmt.Printf("%d of %d boxes run the configuration, confirmed, after %v\n", confirmed, len(boxes), time.Since(start).Round(time.Second))
	return err
}
