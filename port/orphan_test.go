package port_test

import (
	"errors"
	"testing"

	"ibfab/port"
	"ibfab/port/porttest"
	"ibfab/wire/mad"
)

// TestDropOrphans fills a switch in miniature (src → in | out → sink, the
// sink holding what it gets) so that out queues packets that hold in's
// buffer, and one more waits in the crossbar; then in goes Down. What in
// received is an orphan from then on: DropOrphans takes the queued ones
// out of out's queue, Send refuses the late one, each is counted on in as
// input_port_down, and in's buffer is empty again. Once in is back, new
// packets pass.
func TestDropOrphans(t *testing.T) {
	tests := []struct {
		name string
		down func(c *chain)
		back func(t *testing.T, c *chain)
	}{
		{
			name: "SM sets Down",
			down: func(c *chain) { _ = c.in.SetState(mad.PortStateDown) },
			back: func(t *testing.T, c *chain) {
				// The link retrains: both ends come back in Init.
				c.run(t, func() bool { return c.in.State().Phys == mad.PhysStateLinkUp })
				activatePorts(t, c.src, c.in)
			},
		},
		{
			name: "link lost",
			down: func(c *chain) { c.pipes[0].SetCarrier(false) },
			back: func(t *testing.T, c *chain) {
				c.pipes[0].SetCarrier(true)
				c.run(t, func() bool { return c.in.State().Phys == mad.PhysStateLinkUp })
				activatePorts(t, c.src, c.in)
			},
		},
		{
			name: "SM disables the port",
			down: func(c *chain) { _ = c.in.SetPhysState(mad.PhysStateDisabled) },
			back: func(t *testing.T, c *chain) {
				// The source's liveness timeout takes its end down
				// too; both then train again.
				if err := c.in.SetPhysState(mad.PhysStatePolling); err != nil {
					t.Fatal(err)
				}
				c.run(t, func() bool {
					return c.in.State().Phys == mad.PhysStateLinkUp && c.src.State().Phys == mad.PhysStateLinkUp
				})
				activatePorts(t, c.src, c.in)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const rxBlocks = 200
			c := newChain(t, port.Config{RxBlocks: rxBlocks}, 1)
			out, s := c.outs[0], c.sinks[0]
			s.setHold(true)
			blocks := port.Blocks(porttest.UDSize(1000))

			// One packet stays in the crossbar, the rest back up.
			c.fw.setHold(true)
			send(t, c.src, porttest.UD(0, 1, 1000, 0))
			c.run(t, func() bool { return c.in.Credits(0).RxUsed == blocks })
			late := c.fw.setHold(false)
			for i := 1; i < 30; i++ {
				send(t, c.src, porttest.UD(0, 1, 1000, byte(i)))
			}
			c.run(t, func() bool { return c.src.Credits(0).Available < blocks && out.Credits(0).Available < blocks })
			queued := out.Credits(0).Queued
			if queued == 0 || len(late) != 1 {
				t.Fatalf("out queues %d packets, the crossbar holds %d: want some and 1", queued, len(late))
			}
			if got := out.DropOrphans(); got != 0 || out.Credits(0).Queued != queued {
				t.Fatalf("DropOrphans() with in Active = %d, queue %d: want 0, %d", got, out.Credits(0).Queued, queued)
			}

			tt.down(c)
			porttest.Settle(c.ports, c.pipes...)
			if got := out.DropOrphans(); got != queued {
				t.Errorf("DropOrphans() = %d, want the %d queued", got, queued)
			}
			if err := c.fw.forward(late[0]); !errors.Is(err, port.ErrInputDown) {
				t.Errorf("Send(packet in went Down under) = %v, want ErrInputDown", err)
			}
			if got := out.Credits(0).Queued; got != 0 {
				t.Errorf("out still queues %d packets", got)
			}
			if got := c.in.Drops()[port.DropInputDown]; got != uint64(queued+1) {
				t.Errorf("in Drops()[input_port_down] = %d, want %d", got, queued+1)
			}
			if got := c.in.Credits(0).RxUsed; got != 0 {
				t.Errorf("in's buffer holds %d blocks after its orphans went, want 0", got)
			}
			if d := out.Drops(); d.Total() != 0 {
				t.Errorf("out Drops() = %v, want none: orphans count on their input", d.Map())
			}
			if got := out.DropOrphans(); got != 0 {
				t.Errorf("DropOrphans() again = %d, want 0", got)
			}

			// What in receives after it is back is nobody's orphan.
			s.setHold(false)
			s.release(-1)
			tt.back(t, c)
			const fresh = 0xee
			send(t, c.src, porttest.UD(0, 1, 1000, fresh))
			c.run(t, func() bool {
				a := s.arrivals()
				return len(a) > 0 && a[len(a)-1].seq == fresh
			})
			if got := c.in.Drops()[port.DropInputDown]; got != uint64(queued+1) {
				t.Errorf("in Drops()[input_port_down] = %d after it came back, want still %d", got, queued+1)
			}
		})
	}
}

// activatePorts takes each port that is not Active there through Armed.
func activatePorts(t *testing.T, ps ...*port.Port) {
	t.Helper()
	for _, p := range ps {
		if p.State().Port == mad.PortStateActive {
			continue
		}
		for _, s := range []mad.PortState{mad.PortStateArmed, mad.PortStateActive} {
			if err := p.SetState(s); err != nil {
				t.Fatalf("%s: SetState(%v): %v", p.Name(), s, err)
			}
		}
	}
}
