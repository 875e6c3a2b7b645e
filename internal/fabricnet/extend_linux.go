package fabricnet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vishvananda/netns"

	"ibfab/topologies"
)

// Extend adds to the running fabric name the plumbing of nodes first..last
// of u, a topology whose nodes before first are up already in the
// namespaces existing gives (index = node index): one namespace per new
// node and one veth pair per link that touches a new node, the end on an
// old node's side named p<port> in its namespace. It returns the new
// namespaces, in node order. On error it removes what it made, which also
// removes the veth ends it put into old nodes' namespaces.
func Extend(name string, u *topologies.Topology, existing []string, first int) (_ []string, err error) {
	if err := CheckFabricName(name); err != nil {
		return nil, err
	}
	if len(existing) != first || first > u.NumNodes() {
		return nil, fmt.Errorf("fabricnet: %d namespaces for %d existing nodes of %d", len(existing), first, u.NumNodes())
	}
	all := append([]string(nil), existing...)
	seen := map[string]string{}
	for i, ns := range existing {
		seen[ns] = u.Node(i).Name
	}
	var created []string
	for i := first; i < u.NumNodes(); i++ {
		n := u.Node(i)
		ns := Namespace(name, n.Name)
		if other, dup := seen[ns]; dup {
			return nil, fmt.Errorf("nodes %q and %q both map to namespace %s", other, n.Name, ns)
		}
		if _, err := os.Stat(filepath.Join(netnsDir, ns)); err == nil {
			return nil, fmt.Errorf("namespace %s exists already", ns)
		}
		seen[ns] = n.Name
		all = append(all, ns)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, RemoveOnly(name, created))
		}
	}()
	handles := map[int]netns.NsHandle{}
	defer func() {
		for _, h := range handles {
			h.Close()
		}
	}()
	handle := func(i int) (netns.NsHandle, error) {
		if h, ok := handles[i]; ok {
			return h, nil
		}
		h, err := netns.GetFromName(all[i])
		if err != nil {
			return h, fmt.Errorf("namespace %s: %w", all[i], err)
		}
		handles[i] = h
		return h, nil
	}
	for i := first; i < u.NumNodes(); i++ {
		h, err := NewNamespace(all[i])
		if err != nil {
			return nil, err
		}
		created = append(created, all[i])
		handles[i] = h
	}
	for _, l := range u.Links() {
		if l.A.Node < first && l.B.Node < first {
			continue
		}
		ha, err := handle(l.A.Node)
		if err != nil {
			return nil, err
		}
		hb, err := handle(l.B.Node)
		if err != nil {
			return nil, err
		}
		if err := AddVeth(ha, PortIface(l.A.Port), hb, PortIface(l.B.Port)); err != nil {
			return nil, fmt.Errorf("link %s[%d] - %s[%d]: %w",
				u.Node(l.A.Node).Name, l.A.Port, u.Node(l.B.Node).Name, l.B.Port, err)
		}
	}
	return created, nil
}

// RemoveOnly deletes the given namespaces of fabric and nothing else
// (Remove also deletes every other namespace with the fabric's prefix).
// Missing namespaces are not an error.
func RemoveOnly(fabric string, namespaces []string) error {
	var errs []error
	for _, ns := range namespaces {
		if !strings.HasPrefix(ns, fabricPrefix(fabric)) {
			errs = append(errs, fmt.Errorf("refusing to delete %s: not a namespace of fabric %q", ns, fabric))
			continue
		}
		if err := netns.DeleteNamed(ns); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("deleting namespace %s: %w", ns, err))
		}
	}
	return errors.Join(errs...)
}
