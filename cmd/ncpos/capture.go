package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/internal/durable"
	"github.com/ncpos/ncpos/pcapng"
	"github.com/ncpos/ncpos/web/api"
)

const captureUsage = "usage: ncpos capture -host BOX -port LAN1 [-direction in|out|both] [-filter EXPR] [-seconds N] [-frames N] [-snaplen N] -w FILE|-"

// runCapture captures a segment port of a box at its XDP hook into a
// pcapng file, or to standard output for `wireshark -k -i -`.
func runCapture(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("ncpos capture", flag.ContinueOnError)
	var box boxFlags
	box.register(fs)
	var r api.CaptureRequest
	var out string
	fs.StringVar(&r.Port, "port", "", "the segment port, by its front-panel label (LAN1), required")
	fs.StringVar(&r.Direction, "direction", forwarderapi.CaptureIn, "in: frames entering the port; out: frames leaving it; both")
	fs.StringVar(&r.Filter, "filter", "", "which frames, in pcap-filter syntax (say \"vlan 42 and tcp port 443\"); default: all")
	fs.IntVar(&r.Seconds, "seconds", 10, "how long the capture runs")
	fs.IntVar(&r.Frames, "frames", 0, "stop after this many frames (0: no limit)")
	fs.IntVar(&r.Snaplen, "snaplen", 0, "bytes of each frame kept (0: all, up to 16384)")
	fs.StringVar(&out, "w", "", "the pcapng file to write; - writes to standard output")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q\n%s", fs.Arg(0), captureUsage)
	}
	if r.Port == "" || out == "" {
		return errors.New(captureUsage)
	}
	if r.Seconds < 1 || r.Frames < 0 || r.Snaplen < 0 {
		return fmt.Errorf("-seconds %d, -frames %d, -snaplen %d: want at least 1 second, and no negative count", r.Seconds, r.Frames, r.Snaplen)
	}
	if _, err := forwarderapi.ParseCaptureRequest(r.Query()); err != nil {
		return err
	}
	c, err := box.client()
	if err != nil {
		return err
	}
	body, err := c.Capture(ctx, r)
	if err != nil {
		return err
	}
	defer body.Close()
	if out == "-" {
		_, err := io.Copy(os.Stdout, body)
		return interrupted(ctx, err)
	}
	// The file appears whole or not at all; a capture cut short by ^C
	// keeps the frames that arrived whole until then.
	var n int64
	err = durable.WriteFileFrom(out, 0o644, func(f *os.File) error {
		w := &pcapng.Whole{W: f}
		var err error
		n, err = io.Copy(w, body)
		if err := interrupted(ctx, err); err != nil {
			return fmt.Errorf("capture after %d bytes: %w", n, err)
		}
		if ctx.Err() != nil && w.Len() < n {
			n = w.Len()
			return f.Truncate(n)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	fmt.Fprintf(os.Stderr, "%d bytes of pcapng written to %s\n", n, out)
	return nil
}

// interrupted forgives the error a stream ends with when ^C ended it.
func interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
