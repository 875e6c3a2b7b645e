package txn

import (
	"context"
	"runtime"
	"testing"
	"time"

	"ibfab/internal/clock"
	"ibfab/madport"
	"ibfab/wire/mad"
)

// echoPort answers every SMP at once, in memory: what is left is the
// transaction layer's own cost per SMP.
type echoPort struct {
	q chan madport.MAD
}

func newEchoPort() *echoPort { return &echoPort{q: make(chan madport.MAD, 1024)} }

func (p *echoPort) Send(m madport.MAD) error {
	d := m.Data
	if mad.MAD(d).MgmtClass() == mad.ClassSubnDirected {
		d[4] |= 0x80 // DR SMP D bit: the response's direction
	}
	d[3] = byte(mad.MethodGetResp)
	p.q <- madport.MAD{LID: m.LID, Data: d}
	return nil
}

func (p *echoPort) Recv(ctx context.Context) (madport.MAD, error) {
	select {
	case m := <-p.q:
		return m, nil
	case <-ctx.Done():
		return madport.MAD{}, ctx.Err()
	}
}

func (p *echoPort) Info() (madport.Info, error) { return madport.Info{}, nil }
func (p *echoPort) SetIsSM(bool) error          { return nil }
func (p *echoPort) Close() error                { return nil }

// untilEchoPort also waits until a time.
type untilEchoPort struct{ *echoPort }

func (p untilEchoPort) RecvUntil(ctx context.Context, deadline time.Time) (madport.MAD, error) {
	select {
	case m := <-p.q:
		return m, nil
	default:
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case m := <-p.q:
		return m, nil
	case <-ctx.Done():
		return madport.MAD{}, ctx.Err()
	case <-t.C:
		return madport.MAD{}, context.DeadlineExceeded
	}
}

// BenchmarkTxn: directed-route Gets through the transaction layer, 16 in
// flight, answered at once in memory; per SMP. It waits on a port that
// waits until a time (madport.UntilReceiver, as simclient does) and, in
// turns in the same run, on one that waits only on a context (a context
// and a timer per wait, the layer's fallback): their ratios are the
// layer's CPU and allocations per SMP that the simulator client saves.
func BenchmarkTxn(b *testing.B) {
	const chunks = 10
	type variant struct {
		tx              *Layer
		ns, allocs, per float64
	}
	cfg := Config{Window: 16}
	cfg.SetDefaults()
	vs := []*variant{
		{tx: New(untilEchoPort{newEchoPort()}, clock.Real(), cfg, 0)},
		{tx: New(newEchoPort(), clock.Real(), cfg, 0)},
	}
	path := []uint8{0, 1, 2}
	answered := 0
	cb := func(r *Response) {
		if r.Err != nil {
			b.Fatal(r.Err)
		}
		answered++
	}
	var ms runtime.MemStats
	b.ResetTimer()
	for k := range chunks {
		n := b.N/chunks + min(1, b.N%chunks/(k+1))
		for _, v := range vs {
			runtime.ReadMemStats(&ms)
			a0, t0 := ms.Mallocs, time.Now()
			for range n {
				v.tx.Get(Request{DR: true, Path: path, Attr: mad.AttrNodeInfo}, cb)
				if len(v.tx.queue) >= cfg.Window {
					if err := v.tx.Run(context.Background()); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := v.tx.Run(context.Background()); err != nil {
				b.Fatal(err)
			}
			v.ns += float64(time.Since(t0).Nanoseconds())
			runtime.ReadMemStats(&ms)
			v.allocs += float64(ms.Mallocs - a0)
			v.per += float64(n)
		}
	}
	b.StopTimer()
	if answered != 2*b.N {
		b.Fatalf("%d answered of %d", answered, 2*b.N)
	}
	until, ctx := vs[0], vs[1]
	b.ReportMetric(until.ns/until.per, "until-ns/smp")
	b.ReportMetric(ctx.ns/ctx.per, "context-ns/smp")
	b.ReportMetric(until.allocs/until.per, "until-allocs/smp")
	b.ReportMetric(ctx.allocs/ctx.per, "context-allocs/smp")
	b.ReportMetric(until.ns/ctx.ns, "until/context")
}
