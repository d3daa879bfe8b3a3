package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ncpos/ncpos/web/api"
)

const configUsage = "usage: ncpos config get|check|plan -host BOX [-file F] [flags]"

// runConfig reads a box's configuration, and checks and plans a candidate
// against it, on the box itself.
func runConfig(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New(configUsage)
	}
	sub := args[0]
	fs := flag.NewFlagSet("ncpos config "+sub, flag.ContinueOnError)
	var box boxFlags
	box.register(fs)
	file := fs.String("file", "", "the candidate ncpos.toml (check, plan); - reads standard input")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q\n%s", fs.Arg(0), configUsage)
	}
	var text string
	switch sub {
	case "get":
		if *file != "" {
			return errors.New("ncpos config get takes no -file")
		}
	case "check", "plan":
		b, err := readCandidate(*file)
		if err != nil {
			return err
		}
		text = string(b)
	default:
		return fmt.Errorf("unknown config command %q\n%s", sub, configUsage)
	}
	c, err := box.client()
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
		return checkResult(os.Stdout, *file, res)
	}
	plan, res, err := c.PlanConfig(ctx, text)
	if err != nil {
		return err
	}
	if plan == nil {
		return checkResult(os.Stdout, *file, res)
	}
	printPlan(os.Stdout, plan)
	return nil
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
