package softswitch_test

import (
	"testing"

	"ibfab/port"
	"ibfab/port/porttest"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// TestInputDownDropsOrphans backs traffic up from a holding ca2 into sw2,
// whose port 2 then queues packets that hold port 1's buffer, and takes
// sw2's port 1 Down. The switch drops those packets from port 2's queue,
// counted on port 1 as input_port_down, and port 1's buffer is free: what
// arrived on a port that went Down does not outlive its input buffer, as
// in silicon. Once the port is back, traffic passes again.
func TestInputDownDropsOrphans(t *testing.T) {
	sw1Port2 := topologies.PortRef{Node: 1, Port: 2} // line(): ca1 is node 0
	tests := []struct {
		name string
		down func(t *testing.T, f *fabric)
		back func(t *testing.T, f *fabric)
	}{
		{
			name: "SM sets Down",
			down: func(t *testing.T, f *fabric) { f.setState(t, 1, mad.PortStateDown, toSW2...) },
			back: func(t *testing.T, f *fabric) {
				// The link retrains, sw1's end with it.
				f.run(t, func() bool { return f.sw["sw2"].Port(1).State().Phys == mad.PhysStateLinkUp })
			},
		},
		{
			name: "cable pulled",
			down: func(t *testing.T, f *fabric) { f.pipes[sw1Port2].SetCarrier(false) },
			back: func(t *testing.T, f *fabric) {
				f.pipes[sw1Port2].SetCarrier(true)
				f.run(t, func() bool { return f.sw["sw2"].Port(1).State().Phys == mad.PhysStateLinkUp })
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const rxBlocks = 100
			f := newFabric(t, line(t), port.Config{RxBlocks: rxBlocks})
			f.configure(t, true)
			src, dst := f.ca["ca1"].port(), f.ca["ca2"]
			in, out := f.sw["sw2"].Port(1), f.sw["sw2"].Port(2)
			dst.setHold(true)
			blocks := port.Blocks(porttest.UDSize(1000))
			for i := range 40 {
				if err := src.Send(port.NewPacket(udFrom(lidCA1, lidCA2, 0, 1000, byte(i)))); err != nil {
					t.Fatal(err)
				}
			}
			f.run(t, func() bool { return src.Credits(0).Available < blocks && src.Credits(0).Queued > 0 })
			queued := out.Credits(0).Queued
			if queued == 0 || in.Credits(0).RxUsed != queued*blocks {
				t.Fatalf("sw2 port 2 queues %d packets, port 1 holds %d blocks: want some, all of them port 1's",
					queued, in.Credits(0).RxUsed)
			}

			tt.down(t, f)
			f.settle()
			if st := in.State(); st.Port == mad.PortStateActive {
				t.Fatalf("sw2 port 1 is %v, want it taken down", st)
			}
			if got := out.Credits(0).Queued; got != 0 {
				t.Errorf("sw2 port 2 still queues %d packets that came in on port 1", got)
			}
			if got := in.Drops()[port.DropInputDown]; got != uint64(queued) {
				t.Errorf("sw2 port 1 Drops()[input_port_down] = %d, want %d", got, queued)
			}
			if got := in.Credits(0).RxUsed; got != 0 {
				t.Errorf("sw2 port 1 buffer holds %d blocks, want 0", got)
			}

			// Back: everything ca1 still had drains, then a new packet
			// goes through.
			dst.setHold(false)
			if tt.back != nil {
				tt.back(t, f)
			}
			for _, s := range []mad.PortState{mad.PortStateArmed, mad.PortStateActive} {
				if f.sw["sw1"].Port(2).State().Port != mad.PortStateActive {
					f.setState(t, 2, s, toSW1...)
				}
				if in.State().Port != mad.PortStateActive {
					f.setState(t, 1, s, toSW2...)
				}
			}
			f.run(t, func() bool {
				return src.Credits(0).Queued == 0 && f.sw["sw1"].Port(2).Credits(0).Queued == 0 && out.Credits(0).Queued == 0
			})
			got := dst.received()
			if err := src.Send(port.NewPacket(udFrom(lidCA1, lidCA2, 0, 1000, 0xee))); err != nil {
				t.Fatal(err)
			}
			f.run(t, func() bool { return dst.received() == got+1 })
		})
	}
}
