package config

import (
	"fmt"
	"slices"
	"testing"
)

func TestTableNames(t *testing.T) {
	for _, tc := range []struct {
		n     *tableNames
		names []string
		want  []string
	}{
		{segmentNames("bypass pair", "bypass_pair"), []string{"wan", "Wan", "wan", "lan"}, []string{
			`bypass_pair[1].name: "Wan" is not a valid bypass pair name, want 1-15 of a-z, 0-9 and "-"`,
			`bypass_pair[2].name: duplicate bypass pair name "wan", already used by bypass_pair[0]`,
		}},
		{&tableNames{kind: "port", table: "port", valid: portNameRE, want: "letters"}, []string{"A", "a", "A", "-x"}, []string{
			`port[2].name: duplicate port name "A", already used by port[0]`,
			`port[3].name: "-x" is not a valid port name, want letters`,
		}},
	} {
		var got []string
		add := func(path, format string, args ...any) { got = append(got, path+": "+fmt.Sprintf(format, args...)) }
		for i, name := range tc.names {
			tc.n.check(add, indexPath(tc.n.table, i), i, name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s names %q:\n got %q\nwant %q", tc.n.kind, tc.names, got, tc.want)
		}
	}
}
