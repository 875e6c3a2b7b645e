package sm_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// TestLinkSpeedExt sets LinkSpeedExtEnabled as OpenSM's
// force_link_speed_ext does: with bit 31 of the modifier, on links whose
// two ends have extended speeds, only when the port's value differs, and
// not at all when the configuration leaves it (0).
func TestLinkSpeedExt(t *testing.T) {
	for _, tc := range []struct {
		name string
		rate string
		set  mad.LinkSpeedExt
		want mad.LinkSpeedExt // every cabled port's enabled extended speeds after the sweep; 0 all it supports
		// edr cables the last link at 4X EDR, whose ports support no
		// HDR: they are left as they are, with a warning.
		edr bool
	}{
		{name: "none", rate: "4xNDR", set: 0},
		{name: "HDR only", rate: "4xNDR", set: mad.LinkSpeedExtHDR, want: mad.LinkSpeedExtHDR},
		{name: "FDR and EDR", rate: "4xHDR", set: mad.LinkSpeedExtFDR | mad.LinkSpeedExtEDR, want: mad.LinkSpeedExtFDR | mad.LinkSpeedExtEDR},
		{name: "supported, as they are", rate: "4xNDR", set: mad.LinkSpeedExtSetToSupported},
		{name: "no extended speeds", rate: "4xQDR", set: mad.LinkSpeedExtHDR},
		{name: "HDR, one link EDR", rate: "4xNDR", set: mad.LinkSpeedExtHDR, want: mad.LinkSpeedExtHDR, edr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo := topologies.Thesis8()
			var r topologies.Rate
			require.NoError(t, r.UnmarshalText([]byte(tc.rate)))
			require.NoError(t, topo.SetRate(r))
			links := topo.Links()
			edr := links[len(links)-1]
			if tc.edr {
				require.NoError(t, topo.SetLinkRate(edr.A, topologies.Width4x, topologies.SpeedEDR))
			}
			b := newBench(t, topo, 0, 1)
			s := b.newSM(t, sm.Config{PortConfig: sm.PortConfig{LinkSpeedExt: tc.set}})
			first := b.sweep(t, s)
			require.True(t, first.SubnetUp, first.Reason)
			if tc.edr {
				require.Len(t, first.Warnings, 2, "%q", first.Warnings)
				assert.Contains(t, first.Warnings[0], "supports none of the extended speeds HDR")
			}
			for _, l := range topo.Links() {
				for _, end := range []topologies.PortRef{l.A, l.B} {
					ls := b.f.Node(end.Node).Ports.Link(uint8(end.Port))
					want := ls.SpeedSupported
					if tc.want != 0 && !(tc.edr && l.A == edr.A) {
						want = ls.SpeedSupported.Legacy() | mad.JoinSpeeds(0, tc.want, 0)
					}
					assert.Equal(t, want, ls.SpeedEnabled, "%s port %d", topo.Node(end.Node).Name, end.Port)
				}
			}
			// The ports read back what was set: a second sweep sends nothing.
			second := b.sweep(t, s)
			require.True(t, second.SubnetUp, second.Reason)
			act, _ := second.Phase(sm.PhaseActivation)
			assert.Zero(t, act.SMPs, "activation SMPs of the second sweep")
		})
	}
}

// TestLinkSpeedExtConfig refuses values the field does not have.
func TestLinkSpeedExtConfig(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	for _, v := range []mad.LinkSpeedExt{16, 29, 32} {
		_, err := sm.New(b.port, sm.Config{PortConfig: sm.PortConfig{LinkSpeedExt: v}})
		assert.ErrorIs(t, err, sm.ErrConfig, "LinkSpeedExt %d", v)
	}
}
