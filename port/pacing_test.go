package port_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"ibfab/link"
	"ibfab/port"
	"ibfab/port/porttest"
	"ibfab/wire/mad"
)

func TestRate(t *testing.T) {
	tests := []struct {
		name  string
		width mad.LinkWidth
		speed mad.LinkSpeed
		want  uint64
	}{
		{name: "default is 4x SDR", want: 8e9},
		{name: "1x SDR", width: mad.LinkWidth1X, speed: mad.LinkSpeedSDR, want: 2e9},
		{name: "4x DDR", width: mad.LinkWidth4X, speed: mad.LinkSpeedDDR, want: 16e9},
		{name: "12x QDR", width: mad.LinkWidth12X, speed: mad.LinkSpeedQDR, want: 96e9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, port.Config{Width: tt.width, Speed: tt.speed}, nil)
			if got := e.a.Rate(); got != tt.want {
				t.Errorf("Rate() = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestPacing checks, on the manual clock, that n packets of s bytes take
// n·s·8/rate of emulated time, within one packet (and the slack, when the
// transmitter is allowed to run ahead).
func TestPacing(t *testing.T) {
	tests := []struct {
		name    string
		width   mad.LinkWidth
		speed   mad.LinkSpeed
		payload int
		n       int
		slack   time.Duration
	}{
		{name: "4x SDR MTU 2048", width: mad.LinkWidth4X, speed: mad.LinkSpeedSDR, payload: 2048, n: 200, slack: -1},
		{name: "1x SDR small packets", width: mad.LinkWidth1X, speed: mad.LinkSpeedSDR, payload: 100, n: 300, slack: -1},
		{name: "4x QDR MTU 4096", width: mad.LinkWidth4X, speed: mad.LinkSpeedQDR, payload: 4096, n: 200, slack: -1},
		{name: "12x QDR inexact division", width: mad.LinkWidth12X, speed: mad.LinkSpeedQDR, payload: 1000, n: 500, slack: -1},
		{name: "4x EDR 64b/66b", width: mad.LinkWidth4X, speed: mad.LinkSpeedEDR, payload: 4096, n: 300, slack: -1},
		{name: "2x HDR RS-FEC", width: mad.LinkWidth2X, speed: mad.LinkSpeedHDR, payload: 4096, n: 300, slack: -1},
		{name: "4x NDR MTU 4096", width: mad.LinkWidth4X, speed: mad.LinkSpeedNDR, payload: 4096, n: 300, slack: -1},
		{name: "4x XDR MTU 4096", width: mad.LinkWidth4X, speed: mad.LinkSpeedXDR, payload: 4096, n: 300, slack: -1},
		{name: "4x SDR with default slack", width: mad.LinkWidth4X, speed: mad.LinkSpeedSDR, payload: 2048, n: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := port.Config{Width: tt.width, Speed: tt.speed, PaceSlack: tt.slack, RxBlocks: 2048}
			e := newEnv(t, cfg, nil)
			e.activate(t)
			for i := range tt.n {
				send(t, e.a, porttest.UD(0, 1, tt.payload, byte(i)))
			}
			e.run(t, func() bool { return e.rb.count() == tt.n })

			got := e.rb.arrivals()
			elapsed := got[len(got)-1].at.Sub(got[0].at)
			s := porttest.UDSize(tt.payload)
			// In float ns: at NDR a packet takes 82.6 ns, and rounding
			// it to whole ns before multiplying is off by 180 ns.
			perNS := float64(s*8) / float64(e.a.Rate()) * 1e9
			perPacket := time.Duration(perNS)
			want := time.Duration(float64(tt.n) * perNS)
			tol := perPacket + time.Nanosecond + e.a.Config().PaceSlack
			if d := elapsed - want; d < -tol || d > tol {
				t.Errorf("%d packets of %d bytes took %v at %d b/s, want %v ± %v", tt.n, s, elapsed, e.a.Rate(), want, tol)
			}
			// No two starts closer than one serialization time, when the
			// transmitter may not run ahead.
			if tt.slack < 0 {
				for i := 1; i < len(got); i++ {
					if gap := got[i].at.Sub(got[i-1].at); gap < perPacket-time.Nanosecond {
						t.Fatalf("packets %d and %d start %v apart, under the %v serialization time", i-1, i, gap, perPacket)
					}
				}
			}
			noDrops(t, e.a, e.b)
		})
	}
}

// dataWrites is an endpoint that counts the data packets written to it.
type dataWrites struct {
	link.Endpoint
	n atomic.Int64
}

func (d *dataWrites) WritePacket(k link.Kind, b []byte) error {
	if k == link.KindData {
		d.n.Add(1)
	}
	return d.Endpoint.WritePacket(k, b)
}

// TestSendInline: a packet sent to a parked transmitter that may send it
// at once is written before Send returns, by the caller, not after a
// hand-off to the transmitter goroutine; one the pacer holds back waits
// for the transmitter. With one P, the transmitter cannot run before the
// test goroutine blocks, so the count right after Send tells who wrote.
func TestSendInline(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var wa *dataWrites
	e := newEnvOver(t, port.Config{PaceSlack: -1, RxBlocks: 2048}, nil, func(ep link.Endpoint) link.Endpoint {
		d := &dataWrites{Endpoint: ep}
		if wa == nil {
			wa = d
		}
		return d
	})
	e.activate(t)
	e.settle()
	before := wa.n.Load()
	send(t, e.a, porttest.UD(0, 1, 2048, 1))
	assert.Equal(t, before+1, wa.n.Load(), "written by Send")
	send(t, e.a, porttest.UD(0, 1, 2048, 2))
	assert.Equal(t, before+1, wa.n.Load(), "the second waits for its slot on the link")
	e.run(t, func() bool { return e.rb.count() == 2 })
	assert.Equal(t, before+2, wa.n.Load())
	noDrops(t, e.a, e.b)
}

// TestSendInlineQuietLink: a packet sent inline after the link was quiet
// starts a new schedule, so the packets behind it still go one
// serialization time apart: a quiet spell is no credit for a burst.
func TestSendInlineQuietLink(t *testing.T) {
	e := newEnv(t, port.Config{PaceSlack: -1, RxBlocks: 2048}, nil)
	e.activate(t)
	send(t, e.a, porttest.UD(0, 1, 2048, 0))
	e.run(t, func() bool { return e.rb.count() == 1 })
	perPacket := time.Duration(float64(porttest.UDSize(2048)*8) / float64(e.a.Rate()) * 1e9)
	e.clk.Advance(20 * perPacket)
	e.settle()
	for i := range 4 {
		send(t, e.a, porttest.UD(0, 1, 2048, byte(i+1)))
	}
	e.run(t, func() bool { return e.rb.count() == 5 })
	got := e.rb.arrivals()[1:]
	for i := 1; i < len(got); i++ {
		assert.GreaterOrEqual(t, got[i].at.Sub(got[i-1].at), perPacket-time.Nanosecond, "packets %d and %d", i-1, i)
	}
	noDrops(t, e.a, e.b)
}
