package agent

import (
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
