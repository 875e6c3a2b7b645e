package port_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/link"
	"ibfab/link/pipe"
	"ibfab/port"
	"ibfab/port/porttest"
	"ibfab/wire/mad"
)

// Per-VL receive buffers, the downstream view adaptive routing reads, and
// the release hook, with 1000-byte payloads (17 blocks) under a 1024-byte
// MTU (a buffer must hold 18 blocks).
const (
	vlMTU     = 1024
	vlPayload = 1000
)

var vlPktBlocks = port.Blocks(porttest.UDSize(vlPayload))

func TestVLBlocksConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     port.Config
		wantErr bool
		want    []int // RxCapacity of VL0, VL1, …
	}{
		{name: "none: RxBlocks everywhere", cfg: port.Config{DataVLs: 4, RxBlocks: 100}, want: []int{100, 100, 100, 100}},
		{name: "some VLs", cfg: port.Config{DataVLs: 4, RxBlocks: 100, VLBlocks: []int{300, 0, 18}}, want: []int{300, 0, 18, 100}},
		{name: "every VL", cfg: port.Config{DataVLs: 2, VLBlocks: []int{2048, 4000}}, want: []int{2048, 4000}},
		{name: "negative", cfg: port.Config{DataVLs: 4, VLBlocks: []int{-1}}, wantErr: true},
		{name: "under one MTU packet", cfg: port.Config{DataVLs: 4, VLBlocks: []int{100, 17}}, wantErr: true},
		{name: "more VLs than the port has", cfg: port.Config{DataVLs: 2, VLBlocks: []int{100, 100, 100}}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ea, eb := pipe.NewPair()
			t.Cleanup(func() { eb.Close() })
			tc.cfg.MTU = vlMTU
			p, err := port.New(ea, tc.cfg, nil)
			if tc.wantErr {
				assert.ErrorIs(t, err, port.ErrConfig)
				ea.Close()
				return
			}
			require.NoError(t, err)
			t.Cleanup(func() { p.Close() })
			for vl, want := range tc.want {
				assert.Equal(t, want, p.Credits(vl).RxCapacity, "VL%d", vl)
			}
			err = p.SetVLBlocks([]int{5})
			assert.ErrorIs(t, err, port.ErrConfig, "SetVLBlocks checks as New does")
		})
	}
}

// TestVLBlocksCredit: each VL is credited its own buffer, and a VL
// without one never is: what is queued on it waits, nothing is dropped,
// and the other VLs go on. Downstream reports the peer's buffers.
func TestVLBlocksCredit(t *testing.T) {
	e := newEnv(t, port.Config{DataVLs: 4, MTU: vlMTU, RxBlocks: 100, VLBlocks: []int{200, 0, 400}}, nil)
	e.activate(t)
	for vl, want := range []int{200, 0, 400, 100} {
		assert.Equal(t, want, e.a.Credits(vl).Available, "VL%d credit", vl)
		used, capacity, active := e.a.Downstream(vl)
		assert.Equal(t, []any{0, want, true}, []any{used, capacity, active}, "VL%d downstream", vl)
	}
	send(t, e.a, porttest.UD(1, 1, vlPayload, 0))
	send(t, e.a, porttest.UD(0, 1, vlPayload, 1))
	send(t, e.a, porttest.UD(2, 1, vlPayload, 2))
	e.run(t, func() bool { return e.rb.count() == 2 })
	e.settle()
	assert.Equal(t, 2, e.rb.count(), "VL1 has no buffer at b")
	assert.Equal(t, 1, e.a.Queued(1), "the VL1 packet waits")
	noDrops(t, e.a, e.b)
}

// TestDownstream: the downstream view follows the credits: blocks in
// flight and held by the peer count as used until the peer returns them,
// the capacity is the peer's buffer, learnt again when the link retrains.
func TestDownstream(t *testing.T) {
	const rx = 200
	e := newEnv(t, port.Config{DataVLs: 2, MTU: vlMTU, RxBlocks: rx}, nil)
	e.activate(t)
	e.rb.setHold(true)
	const n = 5
	for i := range n {
		send(t, e.a, porttest.UD(0, 1, vlPayload, byte(i)))
	}
	e.run(t, func() bool { return e.rb.count() == n })
	used, capacity, active := e.a.Downstream(0)
	assert.Equal(t, []any{n * vlPktBlocks, rx, true}, []any{used, capacity, active}, "held by b")
	used, _, _ = e.a.Downstream(1)
	assert.Zero(t, used, "VL1 untouched")

	e.rb.setHold(false)
	e.rb.release(-1)
	e.run(t, func() bool { u, _, _ := e.a.Downstream(0); return u == 0 })

	_, _, active = e.a.Downstream(port.VL15)
	assert.False(t, active, "VL15 is no data VL")

	require.NoError(t, e.b.SetState(mad.PortStateDown))
	e.run(t, func() bool { return e.a.State().Port == mad.PortStateDown })
	_, _, active = e.a.Downstream(0)
	assert.False(t, active, "a port that is not Active")
	e.run(t, func() bool { return e.a.State().Port == mad.PortStateInit })
	e.settle()
	_, capacity, _ = e.a.Downstream(0)
	assert.Equal(t, rx, capacity, "learnt again")
}

// TestSetVLBlocks: a buffer that grows is credited at once; one that
// shrinks under the packets it holds drops nothing, takes the credit back
// at once, still takes in what the peer sent against the old credit
// before it heard, and is credited only its new size after. The sender's
// downstream view follows.
func TestSetVLBlocks(t *testing.T) {
	e := newEnv(t, port.Config{DataVLs: 2, MTU: vlMTU, RxBlocks: 200}, nil)
	e.activate(t)

	require.NoError(t, e.b.SetVLBlocks([]int{400}))
	e.settle()
	assert.Equal(t, 400, e.a.Credits(0).Available, "grown: credited at once")
	assert.Equal(t, 400, e.b.Credits(0).RxCapacity)
	assert.Equal(t, 200, e.b.Credits(1).RxCapacity, "VLs past the list keep RxBlocks")
	_, capacity, _ := e.a.Downstream(0)
	assert.Equal(t, 400, capacity)

	// b holds 10 packets (170 blocks); a holds credit for 230 more, and
	// sends 13 packets on it that are still on the wire (held back by
	// the pipe) when b shrinks to 100 blocks.
	e.rb.setHold(true)
	for i := range 10 {
		send(t, e.a, porttest.UD(0, 1, vlPayload, byte(i)))
	}
	e.run(t, func() bool { return e.rb.count() == 10 })
	var mu sync.Mutex
	var wire [][]byte
	e.ea.SetMutate(func(k link.Kind, b []byte) bool {
		if k != link.KindData {
			return false
		}
		mu.Lock()
		wire = append(wire, bytes.Clone(b))
		mu.Unlock()
		return true
	})
	inFlight := (400 - 10*vlPktBlocks) / vlPktBlocks
	for i := range inFlight {
		send(t, e.a, porttest.UD(0, 1, vlPayload, byte(10+i)))
	}
	e.settle()
	require.Len(t, wire, inFlight)
	require.NoError(t, e.b.SetVLBlocks([]int{100}))
	e.settle()
	assert.Zero(t, e.a.Credits(0).Available, "the credit is taken back")
	e.ea.SetMutate(nil)
	for _, b := range wire {
		require.NoError(t, e.ea.WritePacket(link.KindData, b))
	}
	send(t, e.a, porttest.UD(0, 1, vlPayload, 99))
	e.settle()
	assert.Equal(t, 10+inFlight, e.rb.count(), "what was on the wire is taken in")
	assert.Equal(t, (10+inFlight)*vlPktBlocks, e.b.Credits(0).RxUsed, "beyond the new size")
	assert.Equal(t, 1, e.a.Queued(0), "the next waits")
	noDrops(t, e.a, e.b)

	e.rb.setHold(false)
	e.rb.release(-1)
	e.run(t, func() bool { return e.rb.count() == 11+inFlight })
	e.run(t, func() bool { return e.a.Credits(0).Available == 100 })
	_, capacity, _ = e.a.Downstream(0)
	assert.Equal(t, 100, capacity, "learnt afresh when the limit moved back")
	e.a.ResetDownstream()
	_, capacity, _ = e.a.Downstream(0)
	assert.Equal(t, 100, capacity, "ResetDownstream on an idle link")

	// Refilled, the buffer takes its new size and no more.
	e.rb.setHold(true)
	for i := range 10 {
		send(t, e.a, porttest.UD(0, 1, vlPayload, byte(i)))
	}
	e.run(t, func() bool { return e.rb.count() == 11+inFlight+100/vlPktBlocks })
	e.settle()
	assert.Equal(t, 11+inFlight+100/vlPktBlocks, e.rb.count())
	noDrops(t, e.a, e.b)
	e.rb.setHold(false)
	e.rb.release(-1)
}

// TestVLCongestionLevels: each VL's congestion level is its own buffer's
// share.
func TestVLCongestionLevels(t *testing.T) {
	// a's buffers stand for the switch's; b gives no credit on VL0 and
	// VL1, so what a sends there stays queued.
	e := newEnv(t, port.Config{DataVLs: 2, MTU: vlMTU, VLBlocks: []int{80, 320}}, func(c *port.Config) {
		c.VLBlocks = []int{0, 0}
	})
	e.activate(t)
	e.a.SetCongestionThreshold(8) // half the buffer: 40 and 160 blocks
	for i := range 3 {
		send(t, e.a, porttest.UD(0, 1, vlPayload, byte(i)))
		send(t, e.a, porttest.UD(1, 1, vlPayload, byte(i)))
	}
	e.settle()
	c0, _ := e.a.TxCongestion(0)
	c1, _ := e.a.TxCongestion(1)
	assert.True(t, c0, "VL0: 51 of 80 blocks queued")
	assert.False(t, c1, "VL1: 51 of 320 blocks queued")
}

// hookLog records the packets a port's OnRelease reports, checking that
// the port's lock is free (it calls the port back).
type hookLog struct {
	mu  sync.Mutex
	p   *port.Port
	got []*port.Packet
}

func (h *hookLog) released(pkt *port.Packet) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.p != nil {
		_ = h.p.Credits(0) // would deadlock under the port's lock
	}
	h.got = append(h.got, pkt)
}

func (h *hookLog) packets() []*port.Packet {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*port.Packet(nil), h.got...)
}

// TestOnRelease: the receiving port reports each packet it received when
// its last reference goes, before its blocks are credited, and never a
// packet the node built.
func TestOnRelease(t *testing.T) {
	h := &hookLog{}
	e := newEnv(t, port.Config{MTU: vlMTU}, func(c *port.Config) { c.OnRelease = h.released })
	h.mu.Lock()
	h.p = e.b
	h.mu.Unlock()
	e.activate(t)
	e.rb.setHold(true)
	for i := range 3 {
		send(t, e.a, porttest.UD(0, 1, vlPayload, byte(i)))
	}
	e.run(t, func() bool { return e.rb.count() == 3 })
	assert.Empty(t, h.packets(), "held packets are not released")

	e.rb.mu.Lock()
	held := append([]*port.Packet(nil), e.rb.held...)
	e.rb.mu.Unlock()
	require.Len(t, held, 3)
	held[0].Ref()
	e.rb.release(1)
	assert.Empty(t, h.packets(), "a reference is left")
	used := e.b.Credits(0).RxUsed
	held[0].Release()
	assert.Equal(t, []*port.Packet{held[0]}, h.packets(), "the last reference")
	assert.Less(t, e.b.Credits(0).RxUsed, used, "blocks returned after the hook")
	e.rb.release(-1)
	assert.Equal(t, held, h.packets(), "one call per packet, in release order")

	// Packets the node builds have no owner: no hook.
	own := port.NewPacket(porttest.UD(0, 1, 10, 0))
	own.Release()
	send(t, e.b, porttest.UD(0, 1, vlPayload, 0))
	e.run(t, func() bool { return e.ra.count() == 1 })
	assert.Len(t, h.packets(), 3)
}

// TestCreditSlack: by default a receiver that frees a packet tells the
// peer only once the peer's remaining credit has fallen to half the
// buffer, so the peer's downstream view stays as full as before; with a
// CreditSlack of one block every release is advertised at once, and the
// view follows the buffer. Settle lets the ports work without advancing
// the clock, so no keepalive carries the update.
func TestCreditSlack(t *testing.T) {
	const rx = 400
	for _, tc := range []struct {
		name  string
		slack int
		want  int // packets the sender sees held after one release
	}{
		{"default coalescing", 0, 5},
		{"slack of one block", 1, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, port.Config{DataVLs: 2, MTU: vlMTU, RxBlocks: rx}, func(c *port.Config) { c.CreditSlack = tc.slack })
			e.activate(t)
			e.rb.setHold(true)
			for i := range 5 {
				send(t, e.a, porttest.UD(0, 1, vlPayload, byte(i)))
			}
			e.run(t, func() bool { return e.rb.count() == 5 })
			e.rb.release(1)
			e.settle()
			used, _, _ := e.a.Downstream(0)
			assert.Equal(t, tc.want*vlPktBlocks, used)
		})
	}
	e := newEnv(t, port.Config{}, nil)
	assert.Error(t, e.a.SetCreditSlack(-1))
	_, err := port.New(nil, port.Config{CreditSlack: -1}, nil)
	assert.ErrorIs(t, err, port.ErrConfig)
}
