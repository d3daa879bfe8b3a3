package snmp

import (
	"github.com/gosnmp/gosnmp"
)

// maxBulkVars bounds a GETBULK's answer before it is cut to size: a
// manager asking for max-repetitions 10000 gets what fits one datagram
// without the agent first building ten thousand variables.
const maxBulkVars = 256

// answer builds the response PDU to a request; ok is false for PDUs an
// agent does not answer (responses, traps, reports).
func (a *Agent) answer(req *gosnmp.SnmpPacket) (*gosnmp.SnmpPacket, bool) {
	v := a.fullView()
	out := &gosnmp.SnmpPacket{PDUType: gosnmp.GetResponse}
	switch req.PDUType {
	case gosnmp.GetRequest:
		for _, q := range req.Variables {
			o, err := parseOID(q.Name)
			if err != nil {
				return a.genErr(out, req), true
			}
			if x, ok := v.get(o); ok {
				out.Variables = append(out.Variables, pdu(x))
			} else {
				out.Variables = append(out.Variables, gosnmp.SnmpPDU{Name: o.String(), Type: missingType(v, o)})
			}
		}
	case gosnmp.GetNextRequest:
		for _, q := range req.Variables {
			o, err := parseOID(q.Name)
			if err != nil {
				return a.genErr(out, req), true
			}
			out.Variables = append(out.Variables, next(v, o))
		}
	case gosnmp.GetBulkRequest:
		// In a GETBULK, the error-status and error-index fields carry
		// non-repeaters and max-repetitions (RFC 3416 4.2.3).
		nonRep, maxRep := int(req.NonRepeaters), int(req.MaxRepetitions)
		nonRep = min(max(nonRep, 0), len(req.Variables))
		maxRep = max(maxRep, 0)
		oids := make([]OID, len(req.Variables))
		for i, q := range req.Variables {
			o, err := parseOID(q.Name)
			if err != nil {
				return a.genErr(out, req), true
			}
			oids[i] = o
		}
		for _, o := range oids[:nonRep] {
			out.Variables = append(out.Variables, next(v, o))
		}
		rep := oids[nonRep:]
		for r := 0; r < maxRep && len(rep) > 0 && len(out.Variables) < maxBulkVars; r++ {
			done := true
			for i, o := range rep {
				x := next(v, o)
				out.Variables = append(out.Variables, x)
				if x.Type != gosnmp.EndOfMibView {
					done = false
					rep[i] = mustOID(x.Name)
				}
			}
			if done {
				break
			}
		}
	case gosnmp.SetRequest:
		a.Stats.Sets.Add(1)
		out.Variables = req.Variables
		out.Error, out.ErrorIndex = gosnmp.NotWritable, 1
	default:
		a.Stats.UnknownPDUs.Add(1)
		return nil, false
	}
	return out, true
}

func (a *Agent) genErr(out, req *gosnmp.SnmpPacket) *gosnmp.SnmpPacket {
	out.Variables, out.Error, out.ErrorIndex = req.Variables, gosnmp.GenErr, 1
	return out
}

func next(v mergedView, o OID) gosnmp.SnmpPDU {
	if x, ok := v.next(o); ok {
		return pdu(x)
	}
	return gosnmp.SnmpPDU{Name: o.String(), Type: gosnmp.EndOfMibView}
}

// missingType tells noSuchInstance (the object exists, this instance not)
// from noSuchObject.
func missingType(v mergedView, o OID) gosnmp.Asn1BER {
	if len(o) > 0 {
		if x, ok := v.next(o[:len(o)-1]); ok && x.OID.HasPrefix(o[:len(o)-1]) {
			return gosnmp.NoSuchInstance
		}
	}
	return gosnmp.NoSuchObject
}

func pdu(x Var) gosnmp.SnmpPDU {
	return gosnmp.SnmpPDU{Name: x.OID.String(), Type: x.Type, Value: x.Value}
}

// mergedView is statusd's view and the agent's own counters.
type mergedView [2]*View

func (m mergedView) get(o OID) (Var, bool) {
	for _, v := range m {
		if v == nil {
			continue
		}
		if x, ok := v.Get(o); ok {
			return x, true
		}
	}
	return Var{}, false
}

func (m mergedView) next(o OID) (Var, bool) {
	var best Var
	found := false
	for _, v := range m {
		if v == nil {
			continue
		}
		if x, ok := v.Next(o); ok && (!found || compare(x.OID, best.OID) < 0) {
			best, found = x, true
		}
	}
	return best, found
}
