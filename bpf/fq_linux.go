package bpf

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ErrNoFQ says the kernel has no fq qdisc (CONFIG_NET_SCH_FQ), without
// which delay rules cannot hold frames.
var ErrNoFQ = errors.New("the kernel has no fq qdisc (CONFIG_NET_SCH_FQ), which delay rules need to hold frames")

// fqHandle marks the fq qdisc SetupFQ installs, so that RemoveFQ takes out
// only its own ("1bf" reads "ibf").
var fqHandle = netlink.MakeHandle(0x1bf, 0)

// fqLimit is the fq qdisc's packet limit, per flow and in all: a port's
// frames are one flow (one socket), and fq's default of 100 packets per
// flow would drop frames that only wait for their departure time. Credits
// bound what a port has in flight anyway.
const fqLimit = 1 << 16

// SetupFQ makes an fq qdisc the root qdisc of device ifindex (through h,
// a netlink handle in its namespace), which delay rules need: fq holds
// each frame until the departure time the program gave it. Frames timed
// beyond fq's horizon are sent at the horizon, not dropped; fq does no
// pacing of its own. It is a no-op when the device has it already.
func SetupFQ(h *netlink.Handle, ifindex int) error {
	if ok, err := HasFQ(h, ifindex); err != nil || ok {
		return err
	}
	q := netlink.NewFq(netlink.QdiscAttrs{LinkIndex: ifindex, Handle: fqHandle, Parent: netlink.HANDLE_ROOT})
	q.Pacing = 0
	q.PacketLimit, q.FlowPacketLimit = fqLimit, fqLimit
	q.HorizonDropPolicy = netlink.HORIZON_DROP_POLICY_CAP
	if err := h.QdiscReplace(q); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return ErrNoFQ // the qdisc kind is unknown
		}
		return fmt.Errorf("fq qdisc on ifindex %d: %w", ifindex, err)
	}
	return nil
}

// HasFQ reports whether device ifindex has the fq qdisc SetupFQ installs.
func HasFQ(h *netlink.Handle, ifindex int) (bool, error) {
	q, err := ourFQ(h, ifindex)
	return q != nil, err
}

// RemoveFQ removes the fq qdisc SetupFQ installed on device ifindex, if
// there is one; the device goes back to its default qdisc.
func RemoveFQ(h *netlink.Handle, ifindex int) error {
	q, err := ourFQ(h, ifindex)
	if err != nil || q == nil {
		return err
	}
	if err := h.QdiscDel(q); err != nil {
		return fmt.Errorf("removing fq qdisc from ifindex %d: %w", ifindex, err)
	}
	return nil
}

func ourFQ(h *netlink.Handle, ifindex int) (netlink.Qdisc, error) {
	l, err := h.LinkByIndex(ifindex)
	if err != nil {
		return nil, err
	}
	qs, err := h.QdiscList(l)
	if err != nil {
		return nil, err
	}
	for _, q := range qs {
		a := q.Attrs()
		if a.Parent == netlink.HANDLE_ROOT && a.Handle == fqHandle && q.Type() == "fq" {
			return q, nil
		}
	}
	return nil, nil
}
