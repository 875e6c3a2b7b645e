package veth

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"ibfab/wire"
)

// FrameSize returns the largest Ethernet frame an IBA data packet of
// payload MTU mtu makes here: the Ethernet header, LRH, GRH, BTH, DETH,
// the payload, ICRC and VCRC.
func FrameSize(mtu int) int {
	return wire.EthernetSize + wire.LRHSize + wire.GRHSize + wire.BTHSize + wire.DETHSize + mtu + wire.ICRCSize + wire.VCRCSize
}

// VXLANOverhead returns what VXLAN adds to a frame's payload on the
// underlay, against the underlay's IP MTU: the inner Ethernet header, the
// VXLAN and UDP headers and the outer IPv4 (or IPv6) header. A VXLAN
// device carries frames of up to underlay MTU - VXLANOverhead + 14 bytes.
func VXLANOverhead(ipv6 bool) int {
	const inner, vxlan, udp = wire.EthernetSize, 8, 8
	if ipv6 {
		return inner + vxlan + udp + 40
	}
	return inner + vxlan + udp + 20
}

// ErrFrameTooLarge is what CheckFrames returns when a frame cannot pass.
var ErrFrameTooLarge = errors.New("frame too large for the interface")

// CheckFrames reports whether the endpoint's interface carries frames of
// size bytes, and, when it is a VXLAN device, whether its underlay does
// once encapsulated: the lower device it was created on, else the device
// the route to its remote leaves by, looked up in the namespace the device
// was created in (a VXLAN moved into a node's namespace still sends from
// there) when that namespace is named under /run/netns or is init's. An
// underlay it cannot find (a namespace it cannot see or enter, no remote)
// is not checked; the second result says whether it was. It runs on a
// thread in the endpoint's namespace, as Open.
func (e *Endpoint) CheckFrames(size int) (underlayChecked bool, err error) {
	e.nlMu.Lock()
	l, err := e.nlh.LinkByIndex(e.ifindex)
	e.nlMu.Unlock()
	if err != nil {
		return false, fmt.Errorf("veth %s: %w", e.name, err)
	}
	a := l.Attrs()
	if a.MTU+wire.EthernetSize < size {
		return false, fmt.Errorf("%w: %s has MTU %d, frames of %d bytes; the port's packets need %d: give it MTU %d or more, or the fabric a smaller IBA MTU",
			ErrFrameTooLarge, e.name, a.MTU, a.MTU+wire.EthernetSize, size, size-wire.EthernetSize)
	}
	vx, ok := l.(*netlink.Vxlan)
	if !ok {
		return false, nil
	}
	var h *netlink.Handle
	if a.NetNsID >= 0 {
		other, found := namespaceByID(a.NetNsID)
		if !found {
			return false, nil
		}
		defer other.Close()
		if h, err = netlink.NewHandleAt(other); err != nil {
			return false, nil // a namespace this process may not enter
		}
	} else if h, err = netlink.NewHandle(); err != nil {
		return false, fmt.Errorf("veth %s: underlay: %w", e.name, err)
	}
	defer h.Close()
	var under netlink.Link
	switch {
	case vx.VtepDevIndex != 0:
		under, err = h.LinkByIndex(vx.VtepDevIndex)
	case vx.Group != nil && !vx.Group.IsUnspecified():
		var rs []netlink.Route
		if rs, err = h.RouteGet(vx.Group); err == nil && len(rs) > 0 {
			under, err = h.LinkByIndex(rs[0].LinkIndex)
		}
	}
	if err != nil {
		return false, fmt.Errorf("veth %s: underlay: %w", e.name, err)
	}
	if under == nil {
		return false, nil
	}
	v6 := vx.Group != nil && vx.Group.To4() == nil
	mtu := under.Attrs().MTU
	if carried := mtu - VXLANOverhead(v6) + wire.EthernetSize; carried < size {
		return true, fmt.Errorf("%w: VXLAN %s over %s (MTU %d) carries frames of %d bytes; the port's packets need %d: give the underlay MTU %d or more, or the fabric a smaller IBA MTU",
			ErrFrameTooLarge, e.name, under.Attrs().Name, mtu, carried, size, size-wire.EthernetSize+VXLANOverhead(v6))
	}
	return true, nil
}

// namespaceByID finds the namespace the current one knows by nsid among
// the named namespaces and init's.
func namespaceByID(id int) (netns.NsHandle, bool) {
	paths, _ := filepath.Glob("/run/netns/*")
	paths = append(paths, "/proc/1/ns/net")
	for _, p := range paths {
		h, err := netns.GetFromPath(p)
		if err != nil {
			continue
		}
		if got, err := netlink.GetNetNsIdByFd(int(h)); err == nil && got == id {
			return h, true
		}
		h.Close()
	}
	return netns.None(), false
}
