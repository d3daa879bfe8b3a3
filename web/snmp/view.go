// Package snmp is the appliance's read-only SNMP agent: SNMPv2c with a
// community and SNMPv3 with authenticated and encrypted USM users, over a
// view of the box that statusd builds from its latest snapshot, and the
// notifications (traps) statusd sends on bypass transitions, link changes
// and resets. Messages are encoded and decoded by gosnmp; this package
// only decides what to answer and whom to trust.
package snmp

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gosnmp/gosnmp"
)

// OID is an object identifier as its arcs.
type OID []uint32

// parseOID reads a dotted OID ("1.3.6.1.2.1.1.1.0", a leading dot allowed).
func parseOID(s string) (OID, error) {
	s = strings.TrimPrefix(s, ".")
	if s == "" {
		return nil, fmt.Errorf("empty OID")
	}
	parts := strings.Split(s, ".")
	o := make(OID, len(parts))
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("OID %q: arc %q is not a number below 2^32", s, p)
		}
		o[i] = uint32(v)
	}
	return o, nil
}

// mustOID is ParseOID for the agent's own constants.
func mustOID(s string) OID {
	o, err := parseOID(s)
	if err != nil {
		panic(err)
	}
	return o
}

// String is the dotted form with a leading dot, as gosnmp writes names.
func (o OID) String() string {
	var b strings.Builder
	for _, a := range o {
		b.WriteByte('.')
		b.WriteString(strconv.FormatUint(uint64(a), 10))
	}
	return b.String()
}

// Append returns o followed by arcs, never sharing o's array.
func (o OID) Append(arcs ...uint32) OID {
	return append(slices.Clip(o), arcs...)
}

// HasPrefix tells whether p is o or an ancestor of o.
func (o OID) HasPrefix(p OID) bool {
	return len(o) >= len(p) && slices.Equal(o[:len(p)], p)
}

// Var is one object instance of the view.
type Var struct {
	OID   OID
	Type  gosnmp.Asn1BER
	Value any // as gosnmp marshals Type: string or []byte, int, uint, uint32, uint64, a dotted OID string
}

// View is the objects an agent serves, in lexicographic OID order. It is
// built afresh from a snapshot and never changed after, so requests read
// it without locks.
type View struct {
	vars []Var
}

// NewView sorts vars and refuses a duplicate instance, which would make
// GETNEXT walks skip or repeat.
func NewView(vars []Var) (*View, error) {
	vs := slices.Clone(vars)
	slices.SortFunc(vs, func(a, b Var) int { return slices.Compare(a.OID, b.OID) })
	for i := 1; i < len(vs); i++ {
		if slices.Equal(vs[i-1].OID, vs[i].OID) {
			return nil, fmt.Errorf("view has %v twice", vs[i].OID)
		}
	}
	return &View{vars: vs}, nil
}

// Get finds an exact instance.
func (v *View) Get(o OID) (Var, bool) {
	i, ok := slices.BinarySearchFunc(v.vars, o, func(x Var, t OID) int { return slices.Compare(x.OID, t) })
	if !ok {
		return Var{}, false
	}
	return v.vars[i], true
}

// Next finds the first instance after o.
func (v *View) Next(o OID) (Var, bool) {
	i, found := slices.BinarySearchFunc(v.vars, o, func(x Var, t OID) int { return slices.Compare(x.OID, t) })
	if found {
		i++
	}
	if i >= len(v.vars) {
		return Var{}, false
	}
	return v.vars[i], true
}
