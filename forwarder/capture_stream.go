package forwarder

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/forwarder/bpf"
	"github.com/ncpos/ncpos/pcapng"
)

var errDeadline = os.ErrDeadlineExceeded

// captureHdrSize is struct capture_hdr in port.c.
const captureHdrSize = 40

// xdpRedirect is XDP_REDIRECT.
const xdpRedirect = 4

func decodeCaptured(b []byte) (*captured, error) {
	if len(b) < captureHdrSize {
		return nil, fmt.Errorf("forwarder: capture record of %d bytes, shorter than its header", len(b))
	}
	le := binary.LittleEndian
	c := &captured{hdr: bpf.DatapathCaptureHdr{
		TimeNs: le.Uint64(b), Ifindex: le.Uint32(b[8:]), Len: le.Uint32(b[12:]), Caplen: le.Uint32(b[16:]),
		Act: le.Uint32(b[20:]), Drop: le.Uint32(b[24:]), Malformed: le.Uint32(b[28:]), Queue: le.Uint32(b[32:]),
	}}
	if int(c.hdr.Caplen) > len(b)-captureHdrSize || c.hdr.Caplen > c.hdr.Len {
		return nil, fmt.Errorf("forwarder: capture record holds %d bytes, says %d of %d", len(b)-captureHdrSize, c.hdr.Caplen, c.hdr.Len)
	}
	c.data = b[captureHdrSize : captureHdrSize+int(c.hdr.Caplen)]
	return c, nil
}

// CaptureSummary is how a capture ended.
type CaptureSummary struct {
	Why     string // why it ended
	Written uint64 // frames written to the stream
	Counts  CaptureCounts
}

// Stream writes the capture to w as pcapng until ctx ends, the request's
// seconds or frames are reached, or a hooked port is re-attached (a
// configuration change, an engine restart). flush, if not nil, pushes
// what was written to the client; it is called whenever the ring is
// drained. The stream ends with the port's statistics, whose comments say
// why it ended and what the rate cap and a full ring left out.
func (c *Capture) Stream(ctx context.Context, w io.Writer, flush func()) (CaptureSummary, error) {
	var sum CaptureSummary
	if flush == nil {
		flush = func() {}
	}
	r := c.Request
	filter := "every frame"
	if r.Filter != "" {
		filter = fmt.Sprintf("filter %q", r.Filter)
	}
	pw, err := pcapng.NewWriter(w, pcapng.SectionOptions{
		OS:          "ncpos",
		Application: "ncpos forwarderd",
		Comment:     fmt.Sprintf("capture of %s (%s) at the XDP hook, %s", r.Port, r.Direction, filter),
	})
	if err != nil {
		return sum, err
	}
	id, err := pw.AddInterface(pcapng.Interface{
		Name:        c.port.label,
		Description: fmt.Sprintf("%s (%s), segment %s, peer %s", c.port.label, c.port.ifname, c.port.segment.Name, c.port.peer.label),
		SnapLen:     uint32(r.Snaplen),
	})
	if err != nil {
		return sum, err
	}
	flush()
	wall, mono := time.Now(), monotonicNow()
	end := c.Started.Add(time.Duration(r.Seconds) * time.Second)
	lastCheck := time.Now()
	for sum.Why == "" {
		now := time.Now()
		switch {
		case ctx.Err() != nil:
			sum.Why = "the client went away"
			continue
		case !now.Before(end):
			sum.Why = fmt.Sprintf("%d seconds elapsed", r.Seconds)
			continue
		case r.Frames > 0 && sum.Written >= uint64(r.Frames):
			sum.Why = fmt.Sprintf("%d frames captured", r.Frames)
			continue
		case now.Sub(lastCheck) > 250*time.Millisecond:
			lastCheck = now
			if !c.alive() {
				sum.Why = fmt.Sprintf("segment %s was attached anew (a configuration change or an engine restart): start the capture again", c.port.segment.Name)
				continue
			}
		}
		rec, err := c.next(ctx, min(100*time.Millisecond, end.Sub(now)))
		if err != nil && ctx.Err() == nil {
			return sum, err
		}
		if rec == nil {
			flush()
			continue
		}
		p := c.packet(rec, id, wall.Add(time.Duration(int64(rec.hdr.TimeNs)-mono)))
		if err := pw.WritePacket(p); err != nil {
			sum.Why = "writing to the client failed"
			return sum, err
		}
		sum.Written++
		if sum.Written%256 == 0 {
			flush()
		}
	}
	if sum.Counts, err = c.Counts(); err != nil {
		return sum, err
	}
	n := sum.Counts
	lost := n.OverRate + n.RingFull
	err = pw.WriteStats(pcapng.Stats{
		Interface: id, Time: time.Now(), Start: c.Started, End: time.Now(),
		Received: &n.Seen, Accepted: &n.Matched, OSDropped: &lost, Delivered: &sum.Written,
		Comments: []string{
			"capture ended: " + sum.Why,
			fmt.Sprintf("%d frames seen at the hook, %d matched the filter, %d written; overruns: %d over the rate cap (%d frames/s, %d MiB/s), %d lost to a full ring",
				n.Seen, n.Matched, sum.Written, n.OverRate, CaptureMaxFramesPerSecond, captureMaxBytesPerSecond>>20, n.RingFull),
		},
	})
	flush()
	return sum, err
}

// packet is a frame from the ring as an Enhanced Packet Block: on the
// captured port, inbound when it entered there, outbound when it entered
// the peer, with the program's verdict and what it means in a comment.
func (c *Capture) packet(rec *captured, id uint32, at time.Time) pcapng.Packet {
	h := rec.hdr
	p := pcapng.Packet{
		Interface: id, Time: at, Data: rec.data, OrigLen: int(h.Len),
		Verdicts: []pcapng.Verdict{{Type: pcapng.VerdictXDP, Value: uint64(h.Act)}},
	}
	q := h.Queue
	p.Queue = &q
	// Where it goes when forwarded: the peer of the port it entered.
	out := c.port.peer
	p.Direction = pcapng.Inbound
	what := c.port.label + " in: "
	if int(h.Ifindex) != c.port.ifindex {
		out = c.port
		p.Direction = pcapng.Outbound
		what = fmt.Sprintf("%s out: entered %s, ", c.port.label, c.port.peer.label)
	}
	switch {
	case h.Act == xdpRedirect && c.afxdp:
		what += fmt.Sprintf("to the AF_XDP socket of queue %d, for %s", h.Queue, out.label)
	case h.Act == xdpRedirect:
		what += "forwarded to " + out.label
	case int(h.Drop) < bpfDrops:
		what += "dropped: " + DropReasons[h.Drop]
	default:
		what += fmt.Sprintf("XDP verdict %d", h.Act)
	}
	p.Comments = []string{what}
	if h.Malformed != 0 {
		var names []string
		for i, n := range MalformedReasons {
			if h.Malformed&(1<<i) != 0 {
				names = append(names, n)
			}
		}
		p.Comments = append(p.Comments, "malformed: "+strings.Join(names, ", "))
	}
	return p
}

// monotonicNow is CLOCK_MONOTONIC in ns, the clock of bpf_ktime_get_ns.
func monotonicNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}
