package agent

import (
	"fmt"
	"time"

	"ibfab/internal/clock"
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

// leaseState is the lease countdown of one SMA.
type leaseState struct {
	timer clock.Timer
	gen   uint64 // bumped on every stop, so a stale callback does nothing
}

func (l *leaseState) stop() {
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	l.gen++
}

// checkMKeyLocked applies the M_Key check of the SMA at port sma to an
// SMP with method m and M_Key key. ok says whether it may be served, hide
// that a PortInfo Get must answer with the M_Key zeroed. mu held.
func (a *Agent) checkMKeyLocked(sma uint8, m mad.Method, key uint64) (ok, hide bool) {
	p := &a.port[sma]
	info := &p.info
	if info.MKey == 0 || info.MKey == key {
		if p.lease.timer != nil {
			p.lease.stop()
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
	if p.lease.timer == nil && info.MKeyLeasePeriod != 0 && !a.closed {
		gen := p.lease.gen
		p.lease.timer = a.clock.AfterFunc(time.Duration(info.MKeyLeasePeriod)*time.Second, func() {
			a.leaseExpired(sma, gen)
		})
	}
	return false, false
}

// leaseExpired ends the M_Key protection of the SMA at port sma, unless
// the countdown was stopped since it was started.
func (a *Agent) leaseExpired(sma uint8, gen uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := &a.port[sma]
	if p.lease.gen != gen {
		return
	}
	p.lease.timer = nil
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
