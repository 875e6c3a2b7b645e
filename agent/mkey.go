package agent

import (
	"encoding/binary"
	"fmt"
	"time"

	"ibfab/wire/mad"
)

// M_Key checking, IBA 14.2.4. Each SMA (a switch's port 0, each CA port)
// has an M_Key in its PortInfo. An SMP whose M_Key matches, or any SMP
// while the port's M_Key is 0, passes. Otherwise M_KeyProtectBits decide:
//
//	level  Get                          Set, TrapRepress
//	0      answered, M_Key shown        dropped, violation
//	1      answered, M_Key reads 0      dropped, violation
//	2      dropped, violation           dropped, violation
//	3      dropped, violation           dropped, violation
//
// A violation counts in PortInfo.M_KeyViolations and, when
// M_KeyLeasePeriod is not 0 and no lease countdown is running, starts one:
// if no SMP with the right M_Key arrives within the lease period, the
// protect bits fall back to 0, so that a new SM can read the key and take
// over from one that died. A matching SMP stops the countdown.

// A violation is also reported: the SMA sends Trap 256 (Bad M_Key, IBA
// 14.2.5.1) to PortInfo.MasterSMLID, naming the requester, the method,
// the attribute and modifier, and the M_Key it tried. Like Trap 128 it is
// repeated every TrapRepeatInterval until the SM represses it; violations
// while it is outstanding are counted, not reported again (a stream of bad
// SMPs must not become a stream of traps on VL15).

// leaseState is the lease countdown of one SMA.
type leaseState struct{ genTimer }

// checkMKeyLocked applies the M_Key check of the SMA at port sma to an
// SMP with method m and M_Key key. ok says whether it may be served, hide
// that a PortInfo Get must answer with the M_Key zeroed. mu held.
func (a *Agent) checkMKeyLocked(sma uint8, m mad.Method, key uint64) (ok, hide bool) {
	p := &a.port[sma]
	info := &p.info
	if info.MKey == 0 || info.MKey == key {
		if p.mgmt != nil && p.mgmt.lease.armed() {
			p.mgmt.lease.stop()
		}
		return true, false
	}
	if m == mad.MethodGet {
		switch info.MKeyProtectBits {
		case 0:
			return true, false
		case 1:
			return true, true
		}
	}
	info.MKeyViolations = mad.SatAdd(info.MKeyViolations, 1)
	if (p.mgmt == nil || !p.mgmt.lease.armed()) && info.MKeyLeasePeriod != 0 && !a.closed {
		p.mgmtState().lease.start(a.cfg.Clock, time.Duration(info.MKeyLeasePeriod)*time.Second, func(gen uint64) {
			a.leaseExpired(sma, gen)
		})
	}
	return false, false
}

// mkeyTrapState is the Trap 256 of one SMA.
type mkeyTrapState struct {
	outstanding bool
	tid         uint64
	count       uint16 // NoticeCount of the last trap
	notice      mad.NoticeFields
	genTimer    // the repeat
}

// badMKey reports the SMP m, which arrived as in and failed the M_Key
// check, with a Trap 256 from the SMA of in.Port, unless one is
// outstanding there or the SMA has no LID or SM LID yet (then the trap is
// counted as dropped). It returns the trap to transmit. dr says m is a
// directed-route SMP.
func (a *Agent) badMKey(in Inbound, m []byte, dr bool) []Outbound {
	h := mad.MAD(m)
	b := mad.BadMKey{LID: in.SLID, Method: h.Method(), AttrID: h.AttrID(), AttrModifier: h.AttrModifier(),
		MKey: binary.BigEndian.Uint64(m[smpMKeyOffset:])}
	if dr {
		d := mad.DRSMP(m)
		b.DR, b.DRSLID, b.HopCount = true, d.DrSLID(), d.HopCount()&0x3f
		n := int(d.HopCount())
		if n > mad.BadMKeyPathSize {
			n, b.PathTruncated = mad.BadMKeyPathSize, true
		}
		copy(b.ReturnPath[:n], d.ReturnPath()[1:])
	}
	sma := a.smaPort(in.Port)
	a.mu.Lock()
	defer a.mu.Unlock()
	t := &a.port[sma].mgmtState().mtrap
	info := &a.port[sma].info
	switch {
	case t.outstanding || a.closed:
		return nil
	case info.LID == 0 || info.MasterSMLID == 0:
		a.stats.trapsDropped.Add(1)
		return nil
	}
	t.outstanding = true
	a.tidSeq++
	t.tid = uint64(a.cfg.NodeGUID)<<32 | uint64(a.tidSeq)
	t.count++
	t.notice = mad.Trap256(a.cfg.Type, info.LID, &b)
	a.scheduleMKeyTrapLocked(sma)
	outs := a.mkeyTrapOutLocked(sma)
	a.stats.trapsSent.Add(uint64(len(outs)))
	return outs
}

func (a *Agent) scheduleMKeyTrapLocked(sma uint8) {
	info := &a.port[sma].info
	a.port[sma].mgmtState().mtrap.start(a.cfg.Clock, TrapRepeatInterval(info.SubnetTimeOut, info.RespTimeValue), func(gen uint64) {
		a.repeatMKeyTrap(sma, gen)
	})
}

// repeatMKeyTrap sends the outstanding Trap 256 of the SMA at sma again.
func (a *Agent) repeatMKeyTrap(sma uint8, gen uint64) {
	a.mu.Lock()
	t := &a.port[sma].mgmtState().mtrap
	if !t.fired(gen) || !t.outstanding || a.closed {
		a.mu.Unlock()
		return
	}
	outs := a.mkeyTrapOutLocked(sma)
	a.scheduleMKeyTrapLocked(sma)
	a.mu.Unlock()
	a.emit(outs)
}

// mkeyTrapOutLocked builds the outstanding Trap 256 of the SMA at sma,
// LID-routed to the SM as the SM last configured it; mu held.
func (a *Agent) mkeyTrapOutLocked(sma uint8) []Outbound {
	info := &a.port[sma].info
	t := &a.port[sma].mgmtState().mtrap
	n := t.notice
	n.NoticeCount = t.count & 0x7fff
	f := mad.SMPFields{Method: mad.MethodTrap, TransactionID: t.tid, AttrID: mad.AttrNotice, MKey: info.MKey}
	mad.Notice(f.Data[:]).Encode(&n)
	out, local, ok := a.routeTo(sma, info.MasterSMLID)
	if !ok {
		a.stats.trapsDropped.Add(1)
		return nil
	}
	o := smpOut(out, info.LID, info.MasterSMLID, info.MasterSMSL, mad.AppendSMP(nil, &f))
	o.Local = local
	if local {
		a.stats.local.Add(1)
	}
	return []Outbound{o}
}

// repressMKeyTrapLocked stops the outstanding Trap 256 whose TID has the
// low 32 bits of tid (see repressLocked), and reports whether there was
// one; mu held.
func (a *Agent) repressMKeyTrapLocked(tid uint64) bool {
	for i := range a.port {
		m := a.port[i].mgmt
		if m == nil {
			continue
		}
		t := &m.mtrap
		if t.outstanding && uint32(t.tid) == uint32(tid) {
			t.outstanding = false
			t.stop()
			return true
		}
	}
	return false
}

// leaseExpired ends the M_Key protection of the SMA at port sma, unless
// the countdown was stopped since it was started.
func (a *Agent) leaseExpired(sma uint8, gen uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := &a.port[sma]
	if p.mgmt == nil || !p.mgmt.lease.fired(gen) {
		return
	}
	p.info.MKeyProtectBits = 0
}

// LocalGet answers a Get of attr with modifier mod at the SMA of port (a
// CA port, or a switch's port 0) as the node's own driver reads its device
// through the local MAD interface, which skips the M_Key check: it
// succeeds whatever the port's M_Key and protection level, shows the
// M_Key, counts no violation and starts no lease. It returns the
// attribute data, or an error naming the status the SMA answered with.
// The attach point answers its clients' port queries with it.
func (a *Agent) LocalGet(port uint8, attr mad.AttrID, mod uint32) ([]byte, error) {
	if !a.validPort(port) || (a.isSwitch() && port != 0) {
		return nil, fmt.Errorf("agent: no management port %d", port)
	}
	m, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, AttrID: attr, AttrModifier: mod})
	if err != nil {
		return nil, err
	}
	a.stats.received.Add(1)
	if v := a.serveSMP(port, m, true, true); v != verdictRespond {
		// Only SMInfo, with an SM attached, is not the SMA's to answer.
		return nil, fmt.Errorf("agent: local Get(%v) is for the SM", attr)
	}
	r := mad.DRSMP(m)
	if st := r.Status(); st != mad.StatusOK {
		return nil, fmt.Errorf("agent: local Get(%v) mod %d: status %v", attr, mod, st)
	}
	return append([]byte(nil), r.Data()...), nil
}
