package events

import (
	"sort"
	"strconv"
	"strings"
	"time"
)

// Facility is the syslog facility ncpos logs under: 3, "system daemons".
const Facility = 3

// EnterpriseID names ncpos' structured data element (ncpos@ID). 32473 is
// the private enterprise number RFC 5612 reserves for documentation; a
// vendor with its own number replaces it here.
const EnterpriseID = "32473"

// Header is what RFC 5424 puts before the message besides the priority and
// time.
type Header struct {
	Hostname string
	AppName  string
	ProcID   string
}

// Format renders e as one RFC 5424 message (no trailing newline, no framing):
//
//	<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID [ncpos@32473 k="v" ...] MSG
//
// The kind is the MSGID, the fields become structured data, so a collector
// can filter on segment or port without parsing the text.
func Format(e Event, h Header) []byte {
	var b strings.Builder
	b.WriteByte('<')
	b.WriteString(strconv.Itoa(Facility*8 + int(e.Severity)))
	b.WriteString(">1 ")
	t := e.Time
	if t.IsZero() {
		t = time.Now()
	}
	b.WriteString(t.UTC().Format("2006-01-02T15:04:05.000000Z07:00"))
	for _, f := range []struct {
		v   string
		max int
	}{{h.Hostname, 255}, {h.AppName, 48}, {h.ProcID, 128}, {e.Kind, 32}} {
		b.WriteByte(' ')
		b.WriteString(headerField(f.v, f.max))
	}
	b.WriteByte(' ')
	if len(e.Fields) == 0 {
		b.WriteByte('-')
	} else {
		b.WriteString("[ncpos@" + EnterpriseID)
		keys := make([]string, 0, len(e.Fields))
		for k := range e.Fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			name := sdName(k)
			if name == "" {
				continue
			}
			b.WriteString(" " + name + `="` + sdValue(e.Fields[k]) + `"`)
		}
		b.WriteByte(']')
	}
	if e.Message != "" {
		b.WriteByte(' ')
		b.WriteString(e.Message)
	}
	return []byte(b.String())
}

// headerField keeps printable US-ASCII without spaces, at most max bytes,
// and "-" for nothing (RFC 5424 §6.2: NILVALUE).
func headerField(s string, max int) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < max; i++ {
		if c := s[i]; c > 32 && c < 127 {
			b.WriteByte(c)
		}
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}

// sdName keeps what an SD-NAME may hold: printable US-ASCII except
// '=', ' ', ']' and '"', at most 32 bytes.
func sdName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < 32; i++ {
		c := s[i]
		if c > 32 && c < 127 && c != '=' && c != ']' && c != '"' {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// sdValue escapes '"', '\' and ']' as §6.3.3 requires.
func sdValue(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, `]`, `\]`).Replace(s)
}
