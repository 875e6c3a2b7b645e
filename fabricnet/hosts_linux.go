package fabricnet

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"ibfab/link/veth"
	"ibfab/topologies"
)

// A fabric over hosts (CreateOnHosts) has what a deployment over several
// machines has, on one machine: each host a namespace, every pair of hosts
// joined by an underlay veth, the links between hosts VXLAN devices made
// on the underlay in their hosts' namespaces and moved into the nodes'.
const (
	// VXLANPort is the UDP port of the VXLAN links, IANA's (and
	// containerlab's default).
	VXLANPort = 4789
	// VNIBase is the VNI of the topology's link 0; link i has VNIBase+i,
	// so both ends agree (as ibfab export containerlab numbers them).
	VNIBase = 1000
	// UnderlayMTU is the underlay veths' MTU; a VXLAN link gets it less
	// the VXLAN overhead (8950 over IPv4), which carries a 4096-byte IBA
	// MTU packet's 4,184-byte frame.
	UnderlayMTU = MTU
)

// maxHostPairs bounds the hosts of a fabric: every pair gets an underlay
// subnet 10.77.<pair>.0/24.
const maxHostPairs = 256

// HostNamespace returns the namespace of host h (0-based) of fabric:
// ibf-<fabric>--host<h+1>. It carries the fabric's prefix, so Remove finds
// it, and a double dash, which a node's namespace has only for a node named
// "-host…" (CreateOnHosts refuses that clash).
func HostNamespace(fabric string, h int) string {
	return fabricPrefix(fabric) + "-host" + strconv.Itoa(h+1)
}

// UnderlayIface is the name, in host h's namespace, of its underlay veth
// to host peer (both 0-based): u<peer+1>.
func UnderlayIface(peer int) string { return "u" + strconv.Itoa(peer+1) }

// UnderlayAddr is host h's address on its underlay veth to host peer
// (0-based, h != peer): 10.77.<pair>.1 for the lower-numbered host of
// the pair, .2 for the other, the pairs numbered (0,1), (0,2), …, (1,2), ….
func UnderlayAddr(h, peer, hosts int) net.IP {
	a, b := min(h, peer), max(h, peer)
	pair := a*hosts - a*(a+1)/2 + (b - a - 1)
	end := byte(1)
	if h == b {
		end = 2
	}
	return net.IPv4(10, 77, byte(pair), end).To4()
}

// CreateOnHosts is Create for a fabric spread over hosts namespaces: node i
// on host host[i] (0-based). The links whose ends are on one host are veth
// pairs as Create makes them; a link between hosts is a VXLAN device at
// each end (VNI VNIBase plus the link's index, UDP VXLANPort) over the
// underlay veth between the two hosts, named p<port> in the node's
// namespace as a veth end is, so the rest of the harness sees no
// difference. Fabric.Hosts lists the host namespaces, Fabric.Cut the
// links between hosts. On error it removes what it made.
func CreateOnHosts(name string, t *topologies.Topology, host []int, hosts int, progress func(done, total int)) (*Fabric, error) {
	if err := CheckFabricName(name); err != nil {
		return nil, err
	}
	if err := checkHosts(t, host, hosts); err != nil {
		return nil, err
	}
	return build(name, t, host, hosts, progress)
}

// build makes the namespaces and links of Create (host nil: every node
// on one host, no host namespace) and of CreateOnHosts; on error it
// removes what it made.
func build(name string, t *topologies.Topology, host []int, hosts int, progress func(done, total int)) (_ *Fabric, err error) {
	f, err := plan(name, t)
	if err != nil {
		return nil, err
	}
	for h := range hosts {
		ns := HostNamespace(name, h)
		for i, node := range f.Namespaces {
			if node == ns {
				return nil, fmt.Errorf("node %q's namespace %s is host %d's", t.Node(i).Name, ns, h+1)
			}
		}
		if namespaceExists(ns) {
			return nil, fmt.Errorf("namespace %s exists: is fabric %q up? (ibfab down --name %s)", ns, name, name)
		}
		f.Hosts = append(f.Hosts, ns)
	}
	defer func() {
		if err != nil {
			// Every namespace planned: none existed (plan and the loop
			// above checked), and one half made (NewNamespace failing
			// past its creation) goes too.
			err = errors.Join(err, Remove(name, append(slices.Clone(f.Hosts), f.Namespaces...)))
		}
	}()
	var handles []netns.NsHandle
	defer func() {
		for _, h := range handles {
			h.Close()
		}
	}()
	open := func(ns string) (netns.NsHandle, error) {
		h, err := NewNamespace(ns)
		if err != nil {
			return h, err
		}
		handles = append(handles, h)
		return h, nil
	}
	hostNS := make([]netns.NsHandle, hosts)
	for h, ns := range f.Hosts {
		if hostNS[h], err = open(ns); err != nil {
			return nil, err
		}
	}
	for a := range hosts {
		for b := a + 1; b < hosts; b++ {
			if err := addUnderlay(hostNS, a, b, hosts); err != nil {
				return nil, err
			}
		}
	}
	total := t.NumNodes() + t.NumLinks()
	done := 0
	step := func() {
		done++
		if progress != nil {
			progress(done, total)
		}
	}
	nodeNS := make([]netns.NsHandle, t.NumNodes())
	for i, ns := range f.Namespaces {
		if nodeNS[i], err = open(ns); err != nil {
			return nil, err
		}
		step()
	}
	for k, l := range t.Links() {
		if host == nil || host[l.A.Node] == host[l.B.Node] {
			err = AddVeth(nodeNS[l.A.Node], PortIface(l.A.Port), nodeNS[l.B.Node], PortIface(l.B.Port))
		} else {
			ha, hb := host[l.A.Node], host[l.B.Node]
			f.Cut = append(f.Cut, k)
			vni := VNIBase + k
			err = AddVXLAN(hostNS[ha], UnderlayIface(hb), UnderlayAddr(hb, ha, hosts), vni, nodeNS[l.A.Node], PortIface(l.A.Port))
			if err == nil {
				err = AddVXLAN(hostNS[hb], UnderlayIface(ha), UnderlayAddr(ha, hb, hosts), vni, nodeNS[l.B.Node], PortIface(l.B.Port))
			}
		}
		if err != nil {
			return nil, fmt.Errorf("link %s[%d] - %s[%d]: %w",
				t.Node(l.A.Node).Name, l.A.Port, t.Node(l.B.Node).Name, l.B.Port, err)
		}
		step()
	}
	return f, nil
}

// checkHosts reports what is wrong with a placement of t's nodes on hosts.
func checkHosts(t *topologies.Topology, host []int, hosts int) error {
	switch {
	case hosts < 2:
		return fmt.Errorf("fabricnet: %d hosts: a fabric over hosts has 2 or more (Create makes one on one)", hosts)
	case hosts*(hosts-1)/2 > maxHostPairs:
		return fmt.Errorf("fabricnet: %d hosts: at most %d pairs of hosts have an underlay", hosts, maxHostPairs)
	case len(host) != t.NumNodes():
		return fmt.Errorf("fabricnet: a placement of %d nodes for %d", len(host), t.NumNodes())
	}
	used := make([]bool, hosts)
	for i, h := range host {
		if h < 0 || h >= hosts {
			return fmt.Errorf("fabricnet: node %q placed on host %d of %d", t.Node(i).Name, h+1, hosts)
		}
		used[h] = true
	}
	for h, u := range used {
		if !u {
			return fmt.Errorf("fabricnet: host %d gets no node", h+1)
		}
	}
	return nil
}

// addUnderlay joins hosts a and b by a veth, u<b+1> in a - u<a+1> in b,
// each end with its UnderlayAddr.
func addUnderlay(hostNS []netns.NsHandle, a, b, hosts int) error {
	err := AddUnderlay(hostNS[a], UnderlayIface(b), UnderlayAddr(a, b, hosts), hostNS[b], UnderlayIface(a), UnderlayAddr(b, a, hosts))
	if err != nil {
		return fmt.Errorf("underlay host %d - host %d: %w", a+1, b+1, err)
	}
	return nil
}

// AddUnderlay joins two host namespaces by a veth, nameA (in a, address
// addrA) - nameB (in b, addrB), both /24 (IPv4) or /64, MTU UnderlayMTU,
// up: what VXLAN devices (AddVXLAN) between the hosts send over.
func AddUnderlay(a netns.NsHandle, nameA string, addrA net.IP, b netns.NsHandle, nameB string, addrB net.IP) error {
	if err := AddVeth(a, nameA, b, nameB); err != nil {
		return err
	}
	for _, e := range []struct {
		ns   netns.NsHandle
		name string
		ip   net.IP
	}{{a, nameA, addrA}, {b, nameB, addrB}} {
		nh, err := netlink.NewHandleAt(e.ns)
		if err != nil {
			return err
		}
		err = func() error {
			defer nh.Close()
			u, err := nh.LinkByName(e.name)
			if err != nil {
				return err
			}
			mask := net.CIDRMask(24, 32)
			if e.ip.To4() == nil {
				mask = net.CIDRMask(64, 128)
			}
			return nh.AddrAdd(u, &netlink.Addr{IPNet: &net.IPNet{IP: e.ip, Mask: mask}})
		}()
		if err != nil {
			return fmt.Errorf("underlay %s: address %v: %w", e.name, e.ip, err)
		}
	}
	return nil
}

// AddVXLAN makes a VXLAN device of vni on the underlay device lower of
// namespace host, from lower's first address to remote on UDP VXLANPort,
// with lower's MTU less the VXLAN overhead, moves it into namespace node
// as name and sets it up: containerlab's link type vxlan. The device sends
// from host's namespace; the node sees an Ethernet device.
func AddVXLAN(host netns.NsHandle, lower string, remote net.IP, vni int, node netns.NsHandle, name string) error {
	hh, err := netlink.NewHandleAt(host)
	if err != nil {
		return err
	}
	defer hh.Close()
	u, err := hh.LinkByName(lower)
	if err != nil {
		return fmt.Errorf("underlay %s: %w", lower, err)
	}
	family := netlink.FAMILY_V4
	if remote.To4() == nil {
		family = netlink.FAMILY_V6
	}
	addrs, err := hh.AddrList(u, family)
	if err != nil {
		return fmt.Errorf("underlay %s: %w", lower, err)
	}
	if len(addrs) == 0 {
		return fmt.Errorf("underlay %s has no address to send to %s from", lower, remote)
	}
	// A name of the host's namespace alone, until the device is renamed in
	// the node's: VNIs differ, so the names do.
	tmp := "vx" + strconv.Itoa(vni)
	vx := &netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: tmp, MTU: u.Attrs().MTU - veth.VXLANOverhead(family == netlink.FAMILY_V6)},
		VxlanId: vni, VtepDevIndex: u.Attrs().Index, SrcAddr: addrs[0].IP, Group: remote, Port: VXLANPort}
	if err := hh.LinkAdd(vx); err != nil {
		return fmt.Errorf("VXLAN %d on %s: %w", vni, lower, err)
	}
	dev, err := hh.LinkByName(tmp)
	if err == nil {
		err = hh.LinkSetNsFd(dev, int(node))
	}
	if err != nil {
		_ = hh.LinkDel(vx)
		return fmt.Errorf("VXLAN %d: %w", vni, err)
	}
	nh, err := netlink.NewHandleAt(node)
	if err != nil {
		return err
	}
	defer nh.Close()
	dev, err = nh.LinkByName(tmp)
	if err == nil {
		if err = nh.LinkSetName(dev, name); err == nil {
			err = nh.LinkSetUp(dev)
		}
		if err != nil {
			_ = nh.LinkDel(dev)
		}
	}
	if err != nil {
		return fmt.Errorf("VXLAN %d as %s: %w", vni, name, err)
	}
	return nil
}
