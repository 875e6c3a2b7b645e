package bpf

import (
	"ibfab/wire"
	"ibfab/wire/mad"
)

// MatchesMAD reports whether a MAD packet (a data packet, EtherType
// 0x88b5, on VL vl with SL sl, from slid to dlid, carrying madBytes)
// matches m as the eBPF program would match its frame: the management
// plane (package mgmtplane), which has no frames, applies rules with it.
func (m Match) MatchesMAD(vl, sl uint8, dlid, slid uint16, madBytes []byte) bool {
	f := m.Fields
	if len(madBytes) < mad.MADHeaderSize && f&(FieldClass|FieldMethod|FieldAttr) != 0 {
		return false
	}
	h := mad.MAD(madBytes)
	for _, c := range []struct {
		field Field
		ok    func() bool
	}{
		{FieldEtherType, func() bool { return m.EtherType == wire.EtherTypeData }},
		{FieldVL, func() bool { return m.VL == vl }},
		{FieldSL, func() bool { return m.SL == sl }},
		{FieldDLID, func() bool { return m.DLID == dlid }},
		{FieldSLID, func() bool { return m.SLID == slid }},
		{FieldClass, func() bool { return m.Class == h.MgmtClass() }},
		{FieldMethod, func() bool { return m.Method == h.Method() }},
		{FieldAttr, func() bool { return m.Attr == h.AttrID() }},
	} {
		if f&c.field != 0 && !c.ok() {
			return false
		}
	}
	return true
}
