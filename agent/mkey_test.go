package agent_test

import (
	"testing"

	"ibfab/agent"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// TestTrap256 checks the Bad M_Key trap (IBA 14.2.5.1) at a switch's port
// 0 and at a CA port: sent to MasterSMLID from the SMA's LID with the
// offending SMP's details, counted once in M_KeyViolations per bad SMP,
// repeated until the SM represses it, not raised again while outstanding,
// and raised anew after the repress.
func TestTrap256(t *testing.T) {
	const key, wrong = 0x1122334455667788, 0xbad
	const lid, smLID = 5, 1
	for _, typ := range []mad.NodeType{mad.NodeTypeSwitch, mad.NodeTypeCA} {
		t.Run(typ.String(), func(t *testing.T) {
			nd := newNode(t, typ, 2)
			mgmt := uint8(1)
			if typ == mad.NodeTypeSwitch {
				mgmt = 0
			}
			pi := forSet(nd.portInfo(t, mgmt))
			pi.LID, pi.MasterSMLID, pi.MKey, pi.MKeyProtectBits = lid, smLID, key, 2
			nd.setPortInfo(t, mgmt, pi)
			interval := agent.TrapRepeatInterval(pi.SubnetTimeOut, pi.RespTimeValue)

			// A LID-routed Set with the wrong key.
			outs := nd.a.HandleMAD(lidSMP(withMKey(smp(mad.MethodSet, mad.AttrPortInfo, uint32(mgmt), nil), wrong)))
			o := one(t, outs)
			tid := checkTrap256(t, o, typ, mad.BadMKey{LID: 1, Method: mad.MethodSet, AttrID: mad.AttrPortInfo,
				AttrModifier: uint32(mgmt), MKey: wrong})
			if o.MAD != nil && mad.SMP(o.MAD).MKey() != key {
				t.Errorf("trap M_Key %#x, want the port's", mad.SMP(o.MAD).MKey())
			}

			// While it is outstanding, more violations raise no trap.
			if outs := nd.a.HandleMAD(lidSMP(withMKey(smp(mad.MethodGet, mad.AttrNodeInfo, 0, nil), wrong))); len(outs) != 0 {
				t.Errorf("second violation: %d outbounds, want none while the trap is outstanding", len(outs))
			}
			if got := mad.PortInfo(nd.do(t, withMKey(smp(mad.MethodGet, mad.AttrPortInfo, uint32(mgmt), nil), key)).Data()).MKeyViolations(); got != 2 {
				t.Errorf("M_KeyViolations %d, want 2", got)
			}

			// Repeated, same TID, until repressed.
			*nd.sent = nil
			nd.clk.Advance(interval)
			if got := sent256(nd); len(got) != 1 || mad.MAD(got[0].MAD).TransactionID() != tid {
				t.Fatalf("after %v: %d traps 256 sent, want the same one again", interval, len(got))
			}
			rep := mad.SMPFields{Method: mad.MethodTrapRepress, TransactionID: tid, AttrID: mad.AttrNotice, MKey: key}
			if outs := nd.a.HandleMAD(lidSMP(mad.AppendSMP(nil, &rep))); len(outs) != 0 {
				t.Errorf("TrapRepress answered: %+v", outs)
			}
			*nd.sent = nil
			nd.clk.Advance(10 * interval)
			if got := sent256(nd); len(got) != 0 {
				t.Errorf("%d traps 256 after the TrapRepress, want none", len(got))
			}

			// The next violation, directed-route, is a new trap.
			f := mad.DRSMPFields{Method: mad.MethodGet, TransactionID: 42, AttrID: mad.AttrNodeInfo, MKey: wrong,
				HopPointer: 1, HopCount: 1, DrSLID: mad.PermissiveLID, DrDLID: mad.PermissiveLID}
			f.InitialPath[1] = 2
			in := agent.Inbound{Port: 2, SLID: mad.PermissiveLID, DLID: mad.PermissiveLID, DstQP: wire.QP0, MAD: mad.AppendDRSMP(nil, &f)}
			if typ == mad.NodeTypeCA {
				in.Port = 1 // the SMA whose M_Key is set
				f.InitialPath[1] = 1
			}
			want := mad.BadMKey{LID: mad.PermissiveLID, DRSLID: mad.PermissiveLID, Method: mad.MethodGet,
				AttrID: mad.AttrNodeInfo, MKey: wrong, DR: true, HopCount: 1}
			want.ReturnPath[0] = in.Port
			if tid2 := checkTrap256(t, one(t, nd.a.HandleMAD(in)), typ, want); tid2 == tid {
				t.Errorf("new trap reuses TID %#x", tid)
			}
		})
	}
}

// checkTrap256 checks that o is a Trap(Notice) 256 from LID 5 to the SM at
// LID 1 about want, and returns its TID.
func checkTrap256(t *testing.T, o agent.Outbound, typ mad.NodeType, want mad.BadMKey) uint64 {
	t.Helper()
	m, h := mad.SMP(o.MAD), mad.MAD(o.MAD)
	if o.Local || o.Port != 1 || o.SLID != 5 || o.DLID != 1 || o.VL != 15 || o.DestQP != wire.QP0 {
		t.Fatalf("trap outbound %+v, want port 1, LID 5 → 1 on VL15 QP0", o)
	}
	if h.MgmtClass() != mad.ClassSubnLID || h.Method() != mad.MethodTrap || h.AttrID() != mad.AttrNotice {
		t.Fatalf("trap is %v %v %v, want a LID-routed Trap(Notice)", h.MgmtClass(), h.Method(), h.AttrID())
	}
	n := mad.Notice(m.Data())
	if !n.IsGeneric() || n.TrapNumber() != mad.TrapBadMKey || n.Type() != mad.NoticeSecurity ||
		n.ProducerType() != uint32(typ) || n.IssuerLID() != 5 {
		t.Errorf("notice %+v, want generic Security trap 256 from LID 5 by a %v", n.Fields(), typ)
	}
	if got := n.BadMKey(); got != want {
		t.Errorf("trap 256 details %+v, want %+v", got, want)
	}
	return h.TransactionID()
}

// sent256 returns the traps 256 nd gave its Sender (a switch also repeats
// its Trap 128 of the ports' coming up).
func sent256(nd *node) []agent.Outbound {
	var got []agent.Outbound
	for _, o := range *nd.sent {
		if mad.Notice(mad.SMP(o.MAD).Data()).TrapNumber() == mad.TrapBadMKey {
			got = append(got, o)
		}
	}
	return got
}
