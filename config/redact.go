package config

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// RedactedSecret stands for a RADIUS secret in a configuration as the API
// shows it: the secrets stay on the box. A candidate that still holds it
// keeps the secret in force for the same server.
const RedactedSecret = "(secret kept on the box)"

// secretPath is the setting Redact hides.
const secretPath = "auth.radius.secret"

// secretAt is one secret's value in a file: the byte range of its TOML
// string, and the server of the same auth.radius entry.
type secretAt struct {
	index      int
	start, end int
	value      string
}

// secrets finds the auth.radius entries' secrets and servers in data,
// whether written as [[auth.radius]] tables or an array of inline tables.
// Text that does not parse yields what came before the error.
func secrets(data []byte) (secs []secretAt, servers map[int]string) {
	servers = map[int]string{}
	var p unstable.Parser
	p.Reset(data)
	table, arrays := "", map[string]int{}
	var visit func(n *unstable.Node, path string, index int)
	visit = func(n *unstable.Node, path string, index int) {
		switch n.Kind {
		case unstable.String:
			switch path {
			case secretPath:
				r := n.Raw
				secs = append(secs, secretAt{index: index, start: int(r.Offset), end: int(r.Offset + r.Length), value: string(n.Data)})
			case "auth.radius.server":
				servers[index] = string(n.Data)
			}
		case unstable.Array:
			it := n.Children()
			for i := 0; it.Next(); i++ {
				visit(it.Node(), path, i)
			}
		case unstable.InlineTable:
			it := n.Children()
			for it.Next() {
				kv := it.Node()
				visit(kv.Value(), joinKey(path, kv.Key()), index)
			}
		}
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = joinKey("", e.Key())
			if e.Kind == unstable.ArrayTable {
				arrays[table]++
			}
		case unstable.KeyValue:
			visit(e.Value(), joinKey(table, e.Key()), arrays[table]-1)
		}
	}
	return secs, servers
}

func joinKey(prefix string, it unstable.Iterator) string {
	parts := []string{}
	if prefix != "" {
		parts = append(parts, prefix)
	}
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return strings.Join(parts, ".")
}

// Redact returns data with every RADIUS secret replaced by
// RedactedSecret, for the API, the history's diffs and logs.
func Redact(data []byte) []byte {
	secs, _ := secrets(data)
	out := bytes.Clone(data)
	for i := len(secs) - 1; i >= 0; i-- {
		s := secs[i]
		out = append(out[:s.start], append([]byte(strconv.Quote(RedactedSecret)), out[s.end:]...)...)
	}
	return out
}

// Unredact puts back into a candidate the secrets inForce holds where the
// candidate still says RedactedSecret: each the secret of the entry in
// force with the same server. A placeholder with no such entry is an
// error that names it.
func Unredact(candidate, inForce []byte) ([]byte, error) {
	secs, servers := secrets(candidate)
	kept, keptServers := secrets(inForce)
	byServer := map[string][]byte{}
	for _, k := range kept {
		if srv, ok := keptServers[k.index]; ok {
			byServer[srv] = inForce[k.start:k.end]
		}
	}
	out := bytes.Clone(candidate)
	for i := len(secs) - 1; i >= 0; i-- {
		s := secs[i]
		if s.value != RedactedSecret {
			continue
		}
		raw, ok := byServer[servers[s.index]]
		if !ok {
			return nil, fmt.Errorf("auth.radius[%d].secret: %q stands for the secret the box keeps for server %q, but the configuration in force has none for it: give the secret itself", s.index, RedactedSecret, servers[s.index])
		}
		out = append(out[:s.start], append(bytes.Clone(raw), out[s.end:]...)...)
	}
	return out, nil
}
