package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ncpos/ncpos/web/api"
)

const configUsage = "usage: ncpos config get|check|plan|apply|confirm|revert|rollback|history -host BOX [-file F] [-version N] [flags]"

// configOpts are the flags of ncpos config.
type configOpts struct {
	box     boxFlags
	file    string
	version int
	within  time.Duration
	comment string
	yes     bool
	keep    bool          // -no-confirm: leave the change waiting
	watch   time.Duration // how long the change runs before it is confirmed
	diff    bool
	reboot  bool      // -reboot: a change only a boot takes may reboot the box
	in      io.Reader // where the question is answered (standard input)
}

// runConfig reads a box's configuration, checks and plans a candidate
// against it on the box itself, applies one in place with a confirm
// deadline, confirms, reverts and rolls back versions, and lists them.
func runConfig(ctx context.Context, args []string) error {
	return runConfigWith(ctx, args, os.Stdin)
}

func runConfigWith(ctx context.Context, args []string, in io.Reader) error {
	if len(args) == 0 {
		return errors.New(configUsage)
	}
	sub := args[0]
	fs := flag.NewFlagSet("ncpos config "+sub, flag.ContinueOnError)
	o := configOpts{in: in}
	o.box.register(fs)
	fs.StringVar(&o.file, "file", "", "the candidate ncpos.toml (check, plan, apply); - reads standard input")
	fs.IntVar(&o.version, "version", 0, "the version to confirm, revert or roll back to")
	fs.DurationVar(&o.within, "confirm-within", 10*time.Minute, "apply, rollback: the box goes back unless the change is confirmed within this (0: confirmed at once)")
	fs.StringVar(&o.comment, "comment", "", "apply, rollback: why, kept in the history")
	fs.BoolVar(&o.yes, "yes", false, "apply, rollback: do not ask")
	fs.BoolVar(&o.keep, "no-confirm", false, "apply, rollback: leave the change waiting for ncpos config confirm instead of confirming it once the box answers again")
	fs.DurationVar(&o.watch, "watch", 20*time.Second, "apply, rollback: how long the change runs before it is confirmed (longer than the box's 15 s grace, in which it reverts a change that stops a daemon or a segment)")
	fs.BoolVar(&o.diff, "diff", false, "history: print each version's diff")
	fs.BoolVar(&o.reboot, "reboot", false, "apply, rollback: a change only a boot takes reboots the box, which boots on it once and back unless it is confirmed")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q\n%s", fs.Arg(0), configUsage)
	}
	var text string
	switch sub {
	case "get", "history":
		if o.file != "" {
			return fmt.Errorf("ncpos config %s takes no -file", sub)
		}
	case "check", "plan", "apply":
		b, err := readCandidate(o.file)
		if err != nil {
			return err
		}
		text = string(b)
	case "confirm", "revert", "rollback":
		if o.version <= 0 {
			return fmt.Errorf("ncpos config %s needs -version N", sub)
		}
	default:
		return fmt.Errorf("unknown config command %q\n%s", sub, configUsage)
	}
	if o.within < 0 || o.within%time.Second != 0 {
		return fmt.Errorf("-confirm-within %v: want whole seconds, 0 or more", o.within)
	}
	if o.within > 0 && !o.keep && o.watch >= o.within {
		return fmt.Errorf("-watch %v must be shorter than -confirm-within %v", o.watch, o.within)
	}
	c, err := o.box.client()
	if err != nil {
		return err
	}
	switch sub {
	case "get":
		cur, err := c.Config(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, describeInForce(cur))
		fmt.Print(cur.Text)
		return nil
	case "check":
		res, err := c.CheckConfig(ctx, text)
		if err != nil {
			return err
		}
		return checkResult(os.Stdout, o.file, res)
	case "plan", "apply":
		plan, res, err := c.PlanConfig(ctx, text)
		if err != nil {
			return err
		}
		if plan == nil {
			return checkResult(os.Stdout, o.file, res)
		}
		printPlan(os.Stdout, plan)
		if sub == "plan" || len(plan.Changes) == 0 {
			return nil
		}
		if plan.Disturbs == api.EffectReboot && !o.reboot {
			return errors.New("only a reboot takes this change: give -reboot to let the box reboot into it (it boots on it once, and back unless it is confirmed)")
		}
		return o.applyConfig(ctx, c, text, plan.Version)
	case "confirm":
		v, err := c.ConfirmConfig(ctx, o.version)
		if err != nil {
			return configErr(err)
		}
		fmt.Printf("version %d confirmed: the box boots on it\n", v.Number)
		return nil
	case "revert":
		v, err := c.RevertConfig(ctx, o.version)
		if err != nil {
			return configErr(err)
		}
		fmt.Printf("version %d reverted: the box runs version %d again\n", v.Number, v.Parent)
		return nil
	case "rollback":
		return o.rollback(ctx, c)
	}
	h, err := c.ConfigHistory(ctx)
	if err != nil {
		return err
	}
	printHistory(os.Stdout, h, o.diff)
	return nil
}

// applyConfig asks once (unless -yes), applies text in place of version
// replaces and confirms it once the box answers again.
func (o *configOpts) applyConfig(ctx context.Context, c *api.Client, text string, replaces int) error {
	if err := o.ask(fmt.Sprintf("apply this on %s", o.box.shown())); err != nil {
		return err
	}
	within := int(o.within / time.Second)
	res, err := c.ApplyConfig(ctx, api.ConfigApply{Text: text, Replaces: replaces, ConfirmWithin: &within, Comment: o.comment, Reboot: o.reboot})
	if err != nil {
		return configErr(err)
	}
	return o.settle(ctx, res)
}

// rollback applies version -version again.
func (o *configOpts) rollback(ctx context.Context, c *api.Client) error {
	cur, err := c.Config(ctx)
	if err != nil {
		return err
	}
	if err := o.ask(fmt.Sprintf("roll %s back from version %d to the text of version %d", o.box.shown(), cur.Version, o.version)); err != nil {
		return err
	}
	within := int(o.within / time.Second)
	res, err := c.RollbackConfig(ctx, api.ConfigRollback{Version: o.version, Replaces: cur.Version, ConfirmWithin: &within, Comment: o.comment, Reboot: o.reboot})
	if err != nil {
		return configErr(err)
	}
	return o.settle(ctx, res)
}

// settle reports an applied version and, unless it is confirmed already
// or -no-confirm, lets it run for -watch and confirms it once the box
// answers over a new HTTPS connection and has not reverted it: a change
// that cut this host off, or that the box found stops a daemon or a
// segment, is never confirmed, and the box goes back by itself.
func (o *configOpts) settle(ctx context.Context, res *api.ConfigApplied) error {
	v := res.Version
	if res.Rebooting {
		fmt.Printf("version %d applied (%s); the box reboots to take it\n", v.Number, v.State)
	} else {
		fmt.Printf("version %d applied (%s); taken in %s\n", v.Number, v.State, tookList(res.TookMS))
	}
	if v.State != api.VersionPending {
		return nil
	}
	if o.keep {
		fmt.Printf("it waits for its confirmation until %s: ncpos config confirm -host %s -version %d\n", v.Deadline.Local().Format(time.RFC3339), o.box.shown(), v.Number)
		return nil
	}
	c, err := o.box.client() // new connections only: none opened before the change is used
	if err != nil {
		return err
	}
	if res.Rebooting {
		if err := waitBooted(ctx, c, v); err != nil {
			return err
		}
	}
	fmt.Printf("watching it for %v before confirming it\n", o.watch)
	var last error
	for end := time.Now().Add(o.watch); ; time.Sleep(2 * time.Second) {
		var h *api.ConfigHistory
		if h, last = c.ConfigHistory(ctx); last == nil {
			for _, hv := range h.Versions {
				if hv.Number == v.Number && hv.Undone() {
					return fmt.Errorf("the box reverted version %d: %s", v.Number, hv.Reason)
				}
			}
		}
		if !time.Now().Before(end) {
			break
		}
	}
	if last != nil {
		return fmt.Errorf("the box did not answer after the change (%v): version %d is not confirmed and the box goes back by itself at %s", last, v.Number, v.Deadline.Local().Format(time.RFC3339))
	}
	cv, err := c.ConfirmConfig(ctx, v.Number)
	if err != nil {
		return configErr(err)
	}
	fmt.Printf("the box answered after the change: version %d confirmed\n", cv.Number)
	return nil
}

// waitBooted waits until the box answers again on version v after the
// reboot that takes it, or it is reverted, or its deadline passes.
func waitBooted(ctx context.Context, c *api.Client, v api.Version) error {
	fmt.Println("waiting for the box to answer again")
	for ; time.Now().Before(v.Deadline); time.Sleep(2 * time.Second) {
		cur, err := c.Config(ctx)
		if err != nil {
			continue // down
		}
		if cur.Version != v.Number {
			if h, err := c.ConfigHistory(ctx); err == nil {
				for _, hv := range h.Versions {
					if hv.Number == v.Number && hv.Undone() {
						return fmt.Errorf("the box reverted version %d: %s", v.Number, hv.Reason)
					}
				}
			}
			continue // not down yet, or back on the version before
		}
		fmt.Printf("the box answers on version %d\n", v.Number)
		return nil
	}
	return fmt.Errorf("the box did not answer on version %d by its deadline, %s: it goes back by itself", v.Number, v.Deadline.Local().Format(time.RFC3339))
}

// ask asks once on o.in whether to go on, unless -yes.
func (o *configOpts) ask(what string) error {
	if o.yes {
		return nil
	}
	fmt.Printf("%s? [y/N] ", what)
	line, err := bufio.NewReader(o.in).ReadString('\n')
	if err != nil && line == "" {
		return errors.New("no answer (give -yes to go on without asking)")
	}
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		return errors.New("not applied")
	}
	return nil
}

// configErr says why the box did not make a change, from its answer.
func configErr(err error) error {
	cf, ok := api.Conflict(err)
	if !ok {
		return err
	}
	return fmt.Errorf("%s (version %d is in force)", cf.Error, cf.Version)
}

// tookList is how long each taker took, in a stable order.
func tookList(took map[string]float64) string {
	var names []string
	for n := range took {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []string
	for _, n := range names {
		out = append(out, fmt.Sprintf("%s %.0f ms", n, took[n]))
	}
	if len(out) == 0 {
		return "no time (no daemon concerned)"
	}
	return strings.Join(out, ", ")
}

// printHistory lists the versions, newest first, with their diffs when
// asked.
func printHistory(w io.Writer, h *api.ConfigHistory, diffs bool) {
	if len(h.Versions) == 0 {
		fmt.Fprintln(w, "no versions: the configuration was not changed from afar")
	}
	for _, v := range h.Versions {
		who := v.By
		if v.From != "" {
			who += " from " + v.From
		}
		line := fmt.Sprintf("%4d  %-9s  %s  %s", v.Number, v.State, v.Time.Local().Format("2006-01-02 15:04:05"), who)
		if v.Comment != "" {
			line += ": " + v.Comment
		}
		if v.State == api.VersionPending {
			line += fmt.Sprintf(" (reverts at %s unless confirmed)", v.Deadline.Local().Format("15:04:05"))
		}
		if v.Reason != "" && v.State != api.VersionPending {
			line += " [" + v.Reason + "]"
		}
		fmt.Fprintln(w, line)
		if diffs && v.Diff != "" {
			fmt.Fprintln(w, v.Diff)
		}
	}
	for _, e := range h.Errors {
		fmt.Fprintln(w, "unreadable: "+e)
	}
}

// readCandidate reads the candidate file, "-" for standard input.
func readCandidate(path string) ([]byte, error) {
	switch path {
	case "":
		return nil, errors.New("-file is required: the candidate ncpos.toml")
	case "-":
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(path)
}

// describeInForce is the one-line account of the configuration in force.
func describeInForce(cur *api.ConfigInForce) string {
	s := "configuration in force: "
	if cur.Version == 0 {
		s += "not changed from afar since boot"
	} else {
		s += fmt.Sprintf("version %d, applied by %s from %s at %s", cur.Version, cur.By, cur.From, cur.Time.Format("2006-01-02 15:04:05 MST"))
	}
	return s + "; booted from " + cur.Source
}

// checkResult prints a check's problems, named by the candidate's file,
// and fails when there are any.
func checkResult(w io.Writer, file string, res *api.ConfigCheck) error {
	if res.Valid {
		fmt.Fprintln(w, "the box takes this configuration")
		return nil
	}
	for _, e := range res.Errors {
		msg := e.Message
		if rest, ok := strings.CutPrefix(msg, api.ConfigFile+":"); ok && file != "" && file != "-" {
			msg = file + ":" + rest
		}
		fmt.Fprintln(w, msg)
	}
	return fmt.Errorf("the box would refuse this configuration: %d problem(s)", len(res.Errors))
}

// printPlan prints what applying a candidate would do, then the diff.
func printPlan(w io.Writer, p *api.ConfigPlan) {
	if len(p.Changes) == 0 {
		if p.Diff == "" {
			fmt.Fprintln(w, "no change: the candidate is the configuration in force")
		} else {
			fmt.Fprintf(w, "no setting changes (comments or layout only)\n\n%s", p.Diff)
		}
		return
	}
	fmt.Fprintf(w, "applying it in place of version %d would:\n", p.Version)
	for _, c := range p.Changes {
		line := fmt.Sprintf("  %-24s %s", c.Setting, c.Effect)
		if c.Taker != "" {
			line += " (" + c.Taker + ")"
		}
		if len(c.Segments) > 0 {
			line += ": " + strings.Join(c.Segments, ", ")
		}
		if c.Detail != "" {
			line += ": " + c.Detail
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "overall: %s\n\n%s", p.Disturbs, p.Diff)
}
