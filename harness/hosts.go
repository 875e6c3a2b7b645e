package harness

import (
	"fmt"

	"github.com/vishvananda/netlink"

	"ibfab/fabricnet"
	"ibfab/topologies"
)

// CrossLink is a link between two hosts of a fabric over hosts
// (UpOptions.Hosts), with the kind of device each end's port is, as the
// kernel names it in the node's namespace ("vxlan").
type CrossLink struct {
	A     string `json:"a"` // NODE[PORT]
	B     string `json:"b"`
	HostA int    `json:"host_a"` // 1-based
	HostB int    `json:"host_b"`
	DevA  string `json:"dev_a"`
	DevB  string `json:"dev_b"`
}

func (c CrossLink) String() string {
	return fmt.Sprintf("%s (host %d, %s) - %s (host %d, %s)", c.A, c.HostA, c.DevA, c.B, c.HostB, c.DevB)
}

// CrossHostLinks returns the links of running fabric name between its
// hosts, in topology order: none on a fabric on one host.
func CrossHostLinks(name string) ([]CrossLink, error) {
	st, t, err := loadFabric(name)
	if err != nil {
		return nil, err
	}
	if len(st.Hosts) == 0 {
		return nil, nil
	}
	nodes, err := nodesByTopo(st, t)
	if err != nil {
		return nil, err
	}
	var out []CrossLink
	for _, l := range t.Links() {
		a, b := nodes[l.A.Node], nodes[l.B.Node]
		if a.Host == b.Host {
			continue
		}
		c := CrossLink{A: portName(t, l.A), B: portName(t, l.B), HostA: a.Host, HostB: b.Host}
		if c.DevA, err = deviceKind(a.Namespace, l.A.Port); err != nil {
			return nil, fmt.Errorf("%s: %w", c.A, err)
		}
		if c.DevB, err = deviceKind(b.Namespace, l.B.Port); err != nil {
			return nil, fmt.Errorf("%s: %w", c.B, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func portName(t *topologies.Topology, p topologies.PortRef) string {
	return fmt.Sprintf("%s[%d]", t.Node(p.Node).Name, p.Port)
}

// deviceKind is the kernel's type of port's device in namespace ns.
func deviceKind(ns string, port int) (kind string, err error) {
	err = fabricnet.Do(ns, func() error {
		l, err := netlink.LinkByName(fabricnet.PortIface(port))
		if err == nil {
			kind = l.Type()
		}
		return err
	})
	return kind, err
}
