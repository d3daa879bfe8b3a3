package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is one configuration's results: a target with a number of
// segments, every frame size measured.
type Report struct {
	Target         string        `json:"target"` // forwarder, bridge, sim, ...
	Segments       int           `json:"segments"`
	Directions     int           `json:"directions"` // 1 or 2
	LineBPS        float64       `json:"line_bps"`   // nominal, per port
	Flows          int           `json:"flows"`
	Trial          time.Duration `json:"trial_ns"`
	Resolution     float64       `json:"resolution_percent"`
	AcceptableLoss float64       `json:"acceptable_loss_percent"`
	Started        time.Time     `json:"started"`
	Finished       time.Time     `json:"finished"`
	Results        []*SizeResult `json:"results"`
	Notes          []string      `json:"notes,omitempty"`
}

// Streams is the number of streams a trial sends.
func (r *Report) Streams() int { return max(r.Segments, 1) * max(r.Directions, 1) }

// Label names the configuration: "forwarder, 2 segments, both directions".
func (r *Report) Label() string {
	s := fmt.Sprintf("%s, %d segment", r.Target, r.Segments)
	if r.Segments != 1 {
		s += "s"
	}
	if r.Directions == 2 {
		s += ", both directions"
	}
	return s
}

// Aggregate figures over all streams of the configuration.
func (r *Report) aggPPS(s *SizeResult) float64 { return s.ThroughputPPS * float64(r.Streams()) }

// WriteTable writes the table NCPBench users know: per configuration, for each
// frame size the throughput in % of line rate (per port), Gb/s and Mpps
// (over all streams), the line rate it is counted against, latency at the
// throughput rate and the independent count's agreement; then, with more
// than one configuration, the configurations side by side.
func WriteTable(w io.Writer, reports ...*Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, r := range reports {
		fmt.Fprintf(w, "RFC 2544 throughput: %s; line rate %s per port (20 bytes of preamble and gap per frame); trials of %v, resolution %.3g%%, acceptable loss %.3g%%, %d flows\n",
			r.Label(), FormatBPS(r.LineBPS), r.Trial, r.Resolution, r.AcceptableLoss, r.Flows)
		fmt.Fprintln(tw, "frame bytes\tline fps\tthroughput fps\t% line\tGbps\tMpps\tloss %\tlatency µs (§26.2)\tmin/mean/p99/max µs\tcount check\t")
		for _, s := range r.Results {
			lat, rfc := "-", "-"
			if s.Latency != nil && s.Latency.Samples > 0 {
				lat = fmt.Sprintf("%s/%s/%s/%s", us(s.Latency.Min), us(s.Latency.Mean), us(s.Latency.P99), us(s.Latency.Max))
				rfc = us(s.Latency.RFC2544)
			}
			pct := fmt.Sprintf("%.2f", s.PercentLine)
			if s.GeneratorLimited {
				pct += " (gen)"
			}
			fmt.Fprintf(tw, "%d\t%d\t%.0f\t%s\t%.3f\t%.4f\t%.3f\t%s\t%s\t%s\t\n", s.Size, uint64(math.Floor(s.LinePPS)),
				r.aggPPS(s), pct, BitsPerSecond(r.aggPPS(s), s.Size)/1e9, r.aggPPS(s)/1e6, s.LossPercent, rfc, lat, agreement(s))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, n := range r.Notes {
			fmt.Fprintf(w, "note: %s\n", n)
		}
		if l := latencyOf(r); l != nil {
			fmt.Fprintf(w, "latency (RFC 2544 §26.2): the average over %d trial(s) at the throughput rate of each trial's mean latency, every frame timed from the generator's stamp as it is handed to the port to the analyzer taking it in, on one host clock; min/mean/p99/max are over every frame of those trials\n", l.Trials)
		}
		if anyLimited(r) {
			fmt.Fprintln(w, "(gen): the generator could not offer the rates above the figure; the device lost nothing it was offered, so the figure is a floor of its capacity")
		}
		fmt.Fprintln(w)
	}
	if len(reports) < 2 {
		return nil
	}
	fmt.Fprintln(w, "Throughput by configuration (% of line rate / Gbps / Mpps):")
	head := "frame bytes\t"
	for _, r := range reports {
		head += r.Label() + "\t"
	}
	fmt.Fprintln(tw, head)
	for _, size := range sizesOf(reports) {
		row := strconv.Itoa(size) + "\t"
		for _, r := range reports {
			if s := r.find(size); s != nil {
				row += fmt.Sprintf("%.2f%% / %.3f / %.4f\t", s.PercentLine, BitsPerSecond(r.aggPPS(s), size)/1e9, r.aggPPS(s)/1e6)
			} else {
				row += "-\t"
			}
		}
		fmt.Fprintln(tw, row)
	}
	return tw.Flush()
}

func anyLimited(r *Report) bool {
	for _, s := range r.Results {
		if s.GeneratorLimited {
			return true
		}
	}
	return false
}

// agreement summarises the independent counts of a size's throughput
// trials: the worst distance from the analyzer's count.
func agreement(s *SizeResult) string {
	worst, n := 0.0, 0
	for _, t := range s.Trials {
		if t.Test == "throughput" && t.AgreementPct != nil {
			worst, n = math.Max(worst, *t.AgreementPct), n+1
		}
	}
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("≤%.2f%% (%d)", worst, n)
}

func us(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) }

func (r *Report) find(size int) *SizeResult {
	for _, s := range r.Results {
		if s.Size == size {
			return s
		}
	}
	return nil
}

func sizesOf(reports []*Report) []int {
	seen := map[int]bool{}
	var out []int
	for _, r := range reports {
		for _, s := range r.Results {
			if !seen[s.Size] {
				seen[s.Size] = true
				out = append(out, s.Size)
			}
		}
	}
	return out
}

// WriteJSON writes every configuration's report, with every trial.
func WriteJSON(w io.Writer, reports ...*Report) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(struct {
		Reports []*Report `json:"reports"`
	}{reports})
}

// csvHeader are the columns of WriteCSV.
var csvHeader = []string{"target", "segments", "directions", "line_bps", "frame_size", "line_pps",
	"throughput_pps", "percent_line", "gbps", "mpps", "loss_percent", "generator_limited",
	"latency_rfc2544_us", "latency_trials", "latency_min_us", "latency_mean_us", "latency_p99_us", "latency_max_us", "back_to_back_frames"}

// WriteCSV writes one row per configuration and frame size; throughput is
// over all streams, % of line rate per port.
func WriteCSV(w io.Writer, reports ...*Report) error {
	c := csv.NewWriter(w)
	c.Write(csvHeader)
	f := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	for _, r := range reports {
		for _, s := range r.Results {
			agg := r.aggPPS(s)
			row := []string{r.Target, strconv.Itoa(r.Segments), strconv.Itoa(max(r.Directions, 1)), f(r.LineBPS, 0),
				strconv.Itoa(s.Size), f(s.LinePPS, 1), f(agg, 1), f(s.PercentLine, 3),
				f(BitsPerSecond(agg, s.Size)/1e9, 4), f(agg/1e6, 5), f(s.LossPercent, 4), strconv.FormatBool(s.GeneratorLimited)}
			if l := s.Latency; l != nil && l.Samples > 0 {
				row = append(row, us(l.RFC2544), strconv.Itoa(l.Trials), us(l.Min), us(l.Mean), us(l.P99), us(l.Max))
			} else {
				row = append(row, "", "", "", "", "", "")
			}
			if s.BackToBack != nil {
				row = append(row, strconv.Itoa(s.BackToBack.Frames))
			} else {
				row = append(row, "")
			}
			c.Write(row)
		}
	}
	c.Flush()
	return c.Error()
}

// WriteSVG draws throughput (% of line rate, per port) against frame size,
// one line per configuration, as a self-contained SVG the dashboard can
// embed.
func WriteSVG(w io.Writer, reports ...*Report) error {
	const (
		W, H                     = 640, 360
		left, right, top, bottom = 60, 20, 30, 50
	)
	sizes := sizesOf(reports)
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}
	pw, ph := float64(W-left-right), float64(H-top-bottom)
	x := func(i int) float64 {
		if len(sizes) < 2 {
			return left + pw/2
		}
		return left + pw*float64(i)/float64(len(sizes)-1)
	}
	y := func(pct float64) float64 { return top + ph*(1-math.Min(pct, 100)/100) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="13">RFC 2544 throughput, %% of line rate</text>`+"\n", left)
	for pct := 0; pct <= 100; pct += 20 {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%d%%</text>`+"\n",
			left, y(float64(pct)), W-right, y(float64(pct)), left-6, y(float64(pct))+4, pct)
	}
	for i, s := range sizes {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x(i), H-bottom+16, s)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">frame size (bytes)</text>`+"\n", left+pw/2, H-bottom+34)
	for ri, r := range reports {
		col := colors[ri%len(colors)]
		var pts []string
		for i, size := range sizes {
			if s := r.find(size); s != nil {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(s.PercentLine)))
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%d bytes: %.2f%% of line, %.3f Gb/s, %.4f Mpps</title></circle>`+"\n",
					x(i), y(s.PercentLine), col, size, s.PercentLine, BitsPerSecond(r.aggPPS(s), size)/1e9, r.aggPPS(s)/1e6)
			}
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", col, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			W-right-220, top+6+ri*16, col, W-right-205, top+15+ri*16, html.EscapeString(r.Label()))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// latencyOf is the latency of the first size that has one.
func latencyOf(r *Report) *LatencyStats {
	for _, s := range r.Results {
		if s.Latency != nil && s.Latency.Trials > 0 {
			return s.Latency
		}
	}
	return nil
}
