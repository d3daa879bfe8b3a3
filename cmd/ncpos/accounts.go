package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"text/tabwriter"
	"time"

	"github.com/ncpos/ncpos/image"
	"github.com/ncpos/ncpos/internal/durable"
	"github.com/ncpos/ncpos/passwd"
	"github.com/ncpos/ncpos/web/api"
)

const (
	userUsage  = "usage: ncpos user list|add|remove|role|passwd|disable|enable -host BOX [-name N] [-role R] [-new-password-file F] [flags]"
	tokenUsage = "usage: ncpos token create|list|revoke -host BOX [-account A] [-name N] [-role R] [-expires D] [-o F] [flags]"
)

// runUser lists and changes a box's accounts.
func runUser(ctx context.Context, args []string) error { return runUserTo(ctx, args, os.Stdout) }

func runUserTo(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New(userUsage)
	}
	sub := args[0]
	fs := flag.NewFlagSet("ncpos user "+sub, flag.ContinueOnError)
	var box boxFlags
	box.register(fs)
	name := fs.String("name", "", "the account (add, remove, role, passwd, disable, enable)")
	role := fs.String("role", "", "viewer, operator or admin (add, role)")
	pwFile := fs.String("new-password-file", "", "add, passwd: file whose first line is the new password (default: a new random one, printed once)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if sub != "list" && *name == "" {
		return fmt.Errorf("ncpos user %s: -name is required", sub)
	}
	c, err := box.client()
	if err != nil {
		return err
	}
	path := "api/v1/accounts/" + url.PathEscape(*name)
	change := func(ch api.AccountChange, done string) error {
		if err := c.Post(ctx, path, ch, nil); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: %s\n", *name, done)
		return nil
	}
	switch sub {
	case "list":
		var list struct{ Accounts []api.Account }
		if err := c.Get(ctx, "api/v1/accounts", &list); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tROLE\tSTATE\tPASSWORD\tTOKENS\tCREATED")
		for _, a := range list.Accounts {
			state := "enabled"
			if a.Disabled {
				state = "disabled"
			}
			created := "-"
			if !a.Created.IsZero() {
				created = a.Created.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", a.Name, a.Role, state, a.Password, a.Tokens, created)
		}
		return tw.Flush()
	case "add":
		pw, shown, err := newPassword(*pwFile)
		if err != nil {
			return err
		}
		if err := c.Post(ctx, "api/v1/accounts", api.AccountRequest{Name: *name, Role: *role, Password: pw}, nil); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: added as %s\n", *name, *role)
		if shown {
			fmt.Fprintf(out, "password (shown once): %s\n", pw)
		}
		return nil
	case "remove":
		if _, err := c.Call(ctx, "DELETE", path, nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: removed, with its tokens\n", *name)
		return nil
	case "role":
		return change(api.AccountChange{Role: role}, "now "+*role)
	case "passwd":
		pw, shown, err := newPassword(*pwFile)
		if err != nil {
			return err
		}
		if err := change(api.AccountChange{Password: &pw}, "password set"); err != nil {
			return err
		}
		if shown {
			fmt.Fprintf(out, "password (shown once): %s\n", pw)
		}
		return nil
	case "disable", "enable":
		off := sub == "disable"
		return change(api.AccountChange{Disabled: &off}, sub+"d")
	}
	return fmt.Errorf("ncpos user: unknown subcommand %q\n%s", sub, userUsage)
}

// newPassword reads a new password from file, or makes a random one
// that the command then shows.
func newPassword(file string) (pw string, shown bool, err error) {
	if file == "" {
		pw, err = passwd.Random()
		return pw, true, err
	}
	pw, err = image.ReadPassword(file)
	return pw, false, err
}

// runToken creates, lists and revokes a box's API tokens.
func runToken(ctx context.Context, args []string) error { return runTokenTo(ctx, args, os.Stdout) }

func runTokenTo(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New(tokenUsage)
	}
	sub := args[0]
	fs := flag.NewFlagSet("ncpos token "+sub, flag.ContinueOnError)
	var box boxFlags
	box.register(fs)
	account := fs.String("account", "", "create: the account the token acts for")
	name := fs.String("name", "", "create, revoke: the token's name")
	role := fs.String("role", "viewer", "create: viewer, operator or admin, at most the account's")
	expires := fs.Duration("expires", 365*24*time.Hour, "create: how long the token lives")
	outFile := fs.String("o", "", "create: write the secret to this file (mode 0600) instead of printing it, e.g. for Prometheus' credentials_file")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	c, err := box.client()
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		var list struct{ Tokens []api.Token }
		if err := c.Get(ctx, "api/v1/tokens", &list); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tACCOUNT\tROLE\tCREATED\tEXPIRES\tLAST USED")
		for _, t := range list.Tokens {
			used := "never"
			if !t.LastUsed.IsZero() {
				used = t.LastUsed.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.Account, t.Role, t.Created.Format(time.RFC3339), t.Expires.Format(time.RFC3339), used)
		}
		return tw.Flush()
	case "create":
		if *account == "" || *name == "" {
			return errors.New("ncpos token create: -account and -name are required")
		}
		var tok api.TokenCreated
		if err := c.Post(ctx, "api/v1/tokens", api.TokenRequest{Account: *account, Name: *name, Role: *role, ExpiresIn: expires.String()}, &tok); err != nil {
			return err
		}
		if *outFile != "" {
			if err := durable.WriteFile(*outFile, []byte(tok.Secret+"\n"), 0o600); err != nil {
				return fmt.Errorf("the token %s was made, but its secret could not be written (revoke it): %w", tok.Name, err)
			}
			fmt.Fprintf(out, "token %s of %s (%s, expires %s) written to %s\n", tok.Name, tok.Account, tok.Role, tok.Expires.Format(time.RFC3339), *outFile)
			return nil
		}
		fmt.Fprintf(out, "token %s of %s (%s, expires %s), shown once:\n%s\n", tok.Name, tok.Account, tok.Role, tok.Expires.Format(time.RFC3339), tok.Secret)
		return nil
	case "revoke":
		if *name == "" {
			return errors.New("ncpos token revoke: -name is required")
		}
		if _, err := c.Call(ctx, "DELETE", "api/v1/tokens/"+url.PathEscape(*name), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(out, "token %s revoked\n", *name)
		return nil
	}
	return fmt.Errorf("ncpos token: unknown subcommand %q\n%s", sub, tokenUsage)
}
