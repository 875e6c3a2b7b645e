package sa_test

import (
	"testing"

	"ibfab/madport"
	"ibfab/wire/mad"
)

// FuzzHandleMAD feeds the SA any SubnAdm MAD from any LID: it never
// panics, and answers every request once (with a status when it is bad),
// but for one with a wrong SM_Key, which it drops and counts.
func FuzzHandleMAD(f *testing.F) {
	e := newEnv(f)
	seed := func(method mad.Method, attr mad.AttrID, mask uint64, rec []byte) []byte {
		h := mad.SAMADFields{MAD: mad.MADFields{BaseVersion: 1, MgmtClass: mad.ClassSubnAdm, ClassVersion: 2,
			Method: method, TransactionID: 1, AttrID: attr}, ComponentMask: mask}
		copy(h.Data[:], rec)
		return mad.AppendSAMAD(nil, &h)
	}
	pr := mad.PathRecordFields{SLID: e.lid(0), DLID: e.lid(3)}
	mc := mad.MCMemberRecordFields{MGID: broadcast, PortGID: e.gid(1), JoinState: 1}
	mp := mad.MultiPathRecordFields{NumbPath: 4, SGIDCount: 1, DGIDCount: 1, GIDs: []mad.GID{e.gid(0), e.gid(2)}}
	f.Add(uint16(e.lid(1)), seed(mad.MethodGet, mad.AttrSAPathRecord, 0x30, mad.AppendPathRecord(nil, &pr)))
	f.Add(uint16(e.lid(1)), seed(mad.MethodSet, mad.AttrSAMCMemberRecord, 0x10003, mad.AppendMCMemberRecord(nil, &mc)))
	f.Add(uint16(e.lid(1)), seed(mad.MethodDelete, mad.AttrSAMCMemberRecord, 0x10003, mad.AppendMCMemberRecord(nil, &mc)))
	f.Add(uint16(e.lid(0)), seed(mad.MethodGetMulti, mad.AttrSAMultiPathRecord, 1<<6|1<<19|1<<20, mad.AppendMultiPathRecord(nil, &mp)))
	f.Add(uint16(e.lid(2)), seed(mad.MethodGetTable, mad.AttrSANodeRecord, 0, nil))
	f.Add(uint16(7), seed(mad.MethodSet, mad.AttrSAInformInfo, 0, []byte{0xff}))
	f.Fuzz(func(t *testing.T, lid uint16, b []byte) {
		if len(b) < mad.MADSize {
			b = append(b, make([]byte, mad.MADSize-len(b))...)
		}
		b = b[:mad.MADSize]
		b[1] = byte(mad.ClassSubnAdm)
		before, wrongKey := len(e.out.all), e.sa.Stats().WrongSMKey
		e.sa.HandleMAD(madport.MAD{LID: lid, QP: 1, Data: b})
		h := mad.MAD(b)
		answered := len(e.out.all) - before
		rmppCtl := mad.SAMAD(b).RMPPVersion() != 0 && mad.SAMAD(b).RMPPType() != uint8(mad.RMPPTypeData)
		// A wrong SM_Key is dropped unanswered, as OpenSM drops it, and
		// counted.
		dropped := e.sa.Stats().WrongSMKey > wrongKey
		if !h.Method().IsResponse() && h.Method() != mad.MethodReport && !rmppCtl && answered == 0 && !dropped {
			t.Fatalf("request %v %v got no answer", h.Method(), h.AttrID())
		}
		e.out.all = e.out.all[:before]
		e.sa.TakeSets() // keep the pending MFT blocks from growing
	})
}
