package veth_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"ibfab/fabricnet"
	"ibfab/internal/testsupport/testenv"
	"ibfab/link/veth"
)

// clabNS makes a namespace named clab<pid><x> (the prefix of everything
// the containerlab tests make) and deletes it in t.Cleanup.
func clabNS(t *testing.T, x string) (netns.NsHandle, string) {
	t.Helper()
	testenv.RequireRoot(t)
	name := fmt.Sprintf("clab%d%s", os.Getpid(), x)
	_ = netns.DeleteNamed(name)
	h, err := fabricnet.NewNamespace(name)
	require.NoError(t, err)
	t.Cleanup(func() {
		h.Close()
		if err := netns.DeleteNamed(name); err != nil {
			t.Errorf("deleting namespace %s: %v", name, err)
		}
	})
	return h, name
}

func TestFrameSize(t *testing.T) {
	for mtu, want := range map[int]int{256: 344, 1024: 1112, 2048: 2136, 4096: 4184} {
		assert.Equal(t, want, veth.FrameSize(mtu), "MTU %d", mtu)
	}
	assert.Equal(t, 50, veth.VXLANOverhead(false))
	assert.Equal(t, 70, veth.VXLANOverhead(true))
}

// TestCheckFrames: a port's interface must carry its frames, and a VXLAN
// device's underlay them encapsulated, also when the device was moved
// into the node's namespace from the one it sends from.
func TestCheckFrames(t *testing.T) {
	under, underName := clabNS(t, "u")
	node, _ := clabNS(t, "n")
	h, err := netlink.NewHandleAt(under)
	require.NoError(t, err)
	defer h.Close()
	// The underlay: a veth end with an address the VXLAN's remote is
	// routed through, MTU 1500.
	dummy := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "clabdum", MTU: 1500}, PeerName: "clabdup"}
	require.NoError(t, h.LinkAdd(dummy))
	require.NoError(t, h.LinkSetUp(dummy))
	addr, _ := netlink.ParseAddr("10.77.0.1/24")
	require.NoError(t, h.AddrAdd(dummy, addr))
	// Without a lower device the kernel lets a VXLAN's MTU exceed what its
	// underlay carries: only the check catches it.
	vx := &netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: "clabvx", MTU: 9000}, VxlanId: 42, Group: net.ParseIP("10.77.0.2"), Port: 4789}
	require.NoError(t, h.LinkAdd(vx))
	small := &netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: "clabvs", MTU: 1400}, VxlanId: 43, Group: net.ParseIP("10.77.0.2"), Port: 4789}
	require.NoError(t, h.LinkAdd(small))

	check := func(ns netns.NsHandle, ifname string, size int) (bool, error) {
		var checked bool
		var cerr error
		require.NoError(t, fabricnet.DoIn(ns, func() error {
			ep, err := veth.Open(ifname)
			if err != nil {
				return err
			}
			defer ep.Close()
			checked, cerr = ep.CheckFrames(size)
			return nil
		}))
		return checked, cerr
	}

	checked, err := check(under, "clabvx", veth.FrameSize(4096))
	assert.True(t, checked)
	require.Error(t, err)
	assert.True(t, errors.Is(err, veth.ErrFrameTooLarge))
	assert.Contains(t, err.Error(), "VXLAN clabvx over clabdum (MTU 1500) carries frames of 1464 bytes; the port's packets need 4184: give the underlay MTU 4220 or more")

	checked, err = check(under, "clabvx", veth.FrameSize(1024))
	assert.True(t, checked)
	assert.NoError(t, err, "MTU 1024 fits a 1500 underlay")

	_, err = check(under, "clabvs", veth.FrameSize(2048))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "clabvs has MTU 1400, frames of 1414 bytes; the port's packets need 2136: give it MTU 2122 or more")

	// Moved into a node's namespace, it still sends from the underlay's,
	// which the check finds by its id.
	l, err := h.LinkByName("clabvx")
	require.NoError(t, err)
	require.NoError(t, h.LinkSetNsFd(l, int(node)))
	checked, err = check(node, "clabvx", veth.FrameSize(4096))
	assert.True(t, checked, "underlay in namespace %s found", underName)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "over clabdum (MTU 1500)")
	require.NoError(t, h.LinkSetMTU(dummy, 9000))
	checked, err = check(node, "clabvx", veth.FrameSize(4096))
	assert.True(t, checked)
	assert.NoError(t, err, "a jumbo underlay carries it")
}
