package agent_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/link"
	"ibfab/wire/mad"
)

// ndrLink is a 4X NDR port's live state, trained at speed.
func ndrLink(speed mad.LinkSpeed, enabled mad.LinkSpeed) agent.LinkState {
	w, s := link.Supported(mad.LinkWidth4X, mad.LinkSpeedNDR)
	return agent.LinkState{State: mad.PortStateInit, Phys: mad.PhysStateLinkUp, Width: mad.LinkWidth4X, Speed: speed,
		WidthSupported: w, WidthEnabled: w, SpeedSupported: s, SpeedEnabled: enabled}
}

// TestExtendedSpeedFields: a port at an extended speed reports it in the
// LinkSpeedExt fields (LinkSpeedActive stays QDR, as ibsim 0.12 gives it),
// its CapabilityMask and CapabilityMask2 say which speeds it has, and a
// Get answers them whether or not bit 31 of the modifier is set.
func TestExtendedSpeedFields(t *testing.T) {
	nd := newNode(t, mad.NodeTypeCA, 1)
	_, all := link.Supported(mad.LinkWidth4X, mad.LinkSpeedNDR)
	nd.ports.SetLink(1, ndrLink(mad.LinkSpeedHDR, all))
	for _, mod := range []uint32{1, 1 | mad.PortInfoSMSupportsExtendedSpeeds} {
		r := nd.do(t, smp(mad.MethodGet, mad.AttrPortInfo, mod, nil))
		require.Equal(t, mad.StatusOK, status(r), "modifier %#x", mod)
		pi := mad.PortInfo(r.Data()).Fields()
		assert.Equal(t, mad.LinkSpeedQDR, pi.LinkSpeedActive)
		assert.Equal(t, mad.LinkSpeedExtHDR, pi.LinkSpeedExtActive)
		assert.Equal(t, mad.LinkSpeedExt(15), pi.LinkSpeedExtSupported)
		assert.Equal(t, mad.LinkSpeedExt(15), pi.LinkSpeedExtEnabled)
		assert.Zero(t, pi.LinkSpeedExtSupported2, "no XDR")
		assert.Equal(t, mad.LinkWidth1X|mad.LinkWidth2X|mad.LinkWidth4X, pi.LinkWidthSupported)
		assert.NotZero(t, pi.CapabilityMask&mad.PortCapIsExtendedSpeedsSupported)
		assert.NotZero(t, pi.CapabilityMask&mad.PortCapIsCapabilityMask2Supported)
		assert.Equal(t, mad.PortCap2IsLinkSpeedHDRSupported|mad.PortCap2IsLinkSpeedNDRSupported|mad.PortCap2IsLinkWidth2xSupported,
			pi.CapabilityMask2)
	}
}

// TestExtendedSpeedCapsSDR: a port of SDR has no extended-speed bit.
func TestExtendedSpeedCapsSDR(t *testing.T) {
	nd := newNode(t, mad.NodeTypeCA, 1)
	pi := nd.portInfo(t, 1)
	assert.Zero(t, pi.CapabilityMask&(mad.PortCapIsExtendedSpeedsSupported|mad.PortCapIsCapabilityMask2Supported))
	assert.Zero(t, pi.CapabilityMask2)
	assert.Zero(t, pi.LinkSpeedExtSupported)
}

// TestSwitchPort0RateCaps: a switch says what its silicon has on port 0,
// where OpenSM reads it.
func TestSwitchPort0RateCaps(t *testing.T) {
	w, s := link.Supported(mad.LinkWidth4X, mad.LinkSpeedXDR)
	nd := newNode(t, mad.NodeTypeSwitch, 2, func(c *agent.Config) { c.WidthSupported, c.SpeedSupported = w, s })
	pi := nd.portInfo(t, 0)
	assert.NotZero(t, pi.CapabilityMask&mad.PortCapIsExtendedSpeedsSupported)
	assert.Equal(t, mad.PortCap2IsLinkWidth2xSupported|mad.PortCap2IsLinkSpeedHDRSupported|mad.PortCap2IsLinkSpeedNDRSupported|
		mad.PortCap2IsExtendedSpeeds2Supported|mad.PortCap2IsLinkSpeedXDRSupported, pi.CapabilityMask2)
	assert.Equal(t, mad.LinkSpeedExt2XDR, pi.LinkSpeedExtSupported2)
}

// TestSetExtendedSpeed: LinkSpeedExtEnabled counts only in a Set with bit
// 31 (an older SM's reserved zeros must not disable a link's speeds);
// then the port gets the whole set it may train at, and a value it does
// not support is an invalid field.
func TestSetExtendedSpeed(t *testing.T) {
	_, all := link.Supported(mad.LinkWidth4X, mad.LinkSpeedNDR)
	legacy := mad.LinkSpeedSDR | mad.LinkSpeedDDR | mad.LinkSpeedQDR
	tests := []struct {
		name string
		mod  uint32
		ext  mad.LinkSpeedExt
		ext2 mad.LinkSpeedExt2
		st   mad.Status
		want mad.LinkSpeed // Configure's LinkSpeedEnabled, 0 no change
	}{
		{"without bit 31 ignored", 1, mad.LinkSpeedExtHDR, 0, mad.StatusOK, 0},
		{"espeed 4: HDR only", 1 | mad.PortInfoSMSupportsExtendedSpeeds, mad.LinkSpeedExtHDR, 0, mad.StatusOK, legacy | mad.LinkSpeedHDR},
		{"no change", 1 | mad.PortInfoSMSupportsExtendedSpeeds, 0, 0, mad.StatusOK, 0},
		{"disabled", 1 | mad.PortInfoSMSupportsExtendedSpeeds, mad.LinkSpeedExtDisabled, 0, mad.StatusOK, legacy},
		{"set to supported", 1 | mad.PortInfoSMSupportsExtendedSpeeds, mad.LinkSpeedExtSetToSupported, 0, mad.StatusOK, all},
		{"reserved value", 1 | mad.PortInfoSMSupportsExtendedSpeeds, 20, 0, mad.StatusInvalidField, 0},
		{"XDR on an NDR port ignored", 1 | mad.PortInfoSMSupportsExtendedSpeeds, 0, mad.LinkSpeedExt2XDR, mad.StatusOK, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nd := newNode(t, mad.NodeTypeCA, 1)
			nd.ports.SetLink(1, ndrLink(mad.LinkSpeedNDR, all))
			set := forSet(nd.portInfo(t, 1))
			set.LinkSpeedEnabled, set.LinkWidthEnabled = 0, 0
			set.LinkSpeedExtEnabled, set.LinkSpeedExtEnabled2 = tt.ext, tt.ext2
			r := nd.do(t, smp(mad.MethodSet, mad.AttrPortInfo, tt.mod, mad.AppendPortInfo(nil, &set)))
			require.Equal(t, tt.st, status(r))
			if tt.st == mad.StatusOK {
				assert.Equal(t, tt.want, nd.ports.Config(1).LinkSpeedEnabled)
			}
		})
	}
}

// TestSetExtendedSpeedXDR: on an XDR port Enabled2 enables XDR, and a
// speed set in LinkSpeedExtEnabled without it leaves XDR out (ibportstate
// espeed 8 on an XDR link trains NDR).
func TestSetExtendedSpeedXDR(t *testing.T) {
	w, all := link.Supported(mad.LinkWidth4X, mad.LinkSpeedXDR)
	legacy := mad.LinkSpeedSDR | mad.LinkSpeedDDR | mad.LinkSpeedQDR
	for _, tt := range []struct {
		name string
		ext  mad.LinkSpeedExt
		ext2 mad.LinkSpeedExt2
		want mad.LinkSpeed
	}{
		{"NDR only", mad.LinkSpeedExtNDR, 0, legacy | mad.LinkSpeedNDR},
		{"NDR and XDR", mad.LinkSpeedExtNDR, mad.LinkSpeedExt2XDR, legacy | mad.LinkSpeedNDR | mad.LinkSpeedXDR},
		{"XDR alone", mad.LinkSpeedExtDisabled, mad.LinkSpeedExt2XDR, legacy | mad.LinkSpeedXDR},
	} {
		t.Run(tt.name, func(t *testing.T) {
			nd := newNode(t, mad.NodeTypeCA, 1)
			nd.ports.SetLink(1, agent.LinkState{State: mad.PortStateInit, Phys: mad.PhysStateLinkUp, Width: mad.LinkWidth4X,
				Speed: mad.LinkSpeedXDR, WidthSupported: w, WidthEnabled: w, SpeedSupported: all, SpeedEnabled: all})
			pi := nd.portInfo(t, 1)
			require.Equal(t, mad.LinkSpeedExt2XDR, pi.LinkSpeedExtActive2)
			require.Equal(t, mad.LinkSpeedXDR, mad.PortInfo(mad.AppendPortInfo(nil, &pi)).SpeedActive())
			set := forSet(pi)
			set.LinkSpeedEnabled, set.LinkWidthEnabled = 0, 0
			set.LinkSpeedExtEnabled, set.LinkSpeedExtEnabled2 = tt.ext, tt.ext2
			r := nd.do(t, smp(mad.MethodSet, mad.AttrPortInfo, 1|mad.PortInfoSMSupportsExtendedSpeeds, mad.AppendPortInfo(nil, &set)))
			require.Equal(t, mad.StatusOK, status(r))
			assert.Equal(t, tt.want, nd.ports.Config(1).LinkSpeedEnabled)
		})
	}
}
