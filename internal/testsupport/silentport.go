package testsupport

import (
	"context"
	"errors"
	"time"

	"ibfab/internal/clock"
	"ibfab/madport"
	"ibfab/wire/mad"
)

// SilentPort is a madport.Port that takes every MAD and never answers:
// what an SM meets when nothing answers, for tests of timeouts and
// resends. Recv lets time pass on its manual clock (as memport does)
// until its context ends. Sent and TIDs record each send's time and TID.
type SilentPort struct {
	Clock *clock.Manual
	Sent  []time.Time
	TIDs  []uint64
}

var _ madport.Port = (*SilentPort)(nil)

// Send implements madport.Port.
func (p *SilentPort) Send(m madport.MAD) error {
	p.Sent = append(p.Sent, p.Clock.Now())
	p.TIDs = append(p.TIDs, mad.MAD(m.Data).TransactionID())
	return nil
}

// Recv implements madport.Port.
func (p *SilentPort) Recv(ctx context.Context) (madport.MAD, error) {
	for ctx.Err() == nil && p.Clock.AdvanceToNext() {
	}
	if ctx.Err() == nil {
		return madport.MAD{}, errors.New("SilentPort: nothing will ever come")
	}
	return madport.MAD{}, ctx.Err()
}

// Info implements madport.Port.
func (p *SilentPort) Info() (madport.Info, error) { return madport.Info{}, nil }

// SetIsSM implements madport.Port.
func (p *SilentPort) SetIsSM(bool) error { return nil }

// Close implements madport.Port.
func (p *SilentPort) Close() error { return nil }
