package snmp

import (
	"testing"

	"github.com/ncpos/ncpos/config"
)

// TestProtocolsMatchConfig keeps the names the configuration accepts and
// the protocols the agent maps them to the same set: a name validated
// there but missing here would start an agent without its key.
func TestProtocolsMatchConfig(t *testing.T) {
	for _, c := range []struct {
		names []string
		table map[string]bool
	}{
		{config.SNMPAuthProtocols, keys(AuthProtocols)},
		{config.SNMPPrivProtocols, keys(PrivProtocols)},
	} {
		if len(c.names) != len(c.table) {
			t.Errorf("configuration takes %v, the agent maps %v", c.names, c.table)
		}
		for _, n := range c.names {
			if !c.table[n] {
				t.Errorf("configuration takes %q, the agent does not map it", n)
			}
		}
	}
}

func keys[V any](m map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}
