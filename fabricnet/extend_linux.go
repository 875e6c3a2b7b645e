package fabricnet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"ibfab/topologies"
)

// Extend adds to the running fabric name the plumbing of nodes first..last
// of u, a topology whose nodes before first are up already in the
// namespaces existing gives (index = node index): one namespace per new
// node and one veth pair per link that touches a new node, the end on an
// old node's side named p<port> in its namespace. It returns the new
// namespaces, in node order. On error it removes what it made (Retract).
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
	var plugged []oldEnd
	defer func() {
		if err != nil {
			err = errors.Join(err, unplug(plugged), RemoveOnly(name, created))
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
		plugged = append(plugged, oldEnds(u, existing, first, l)...)
	}
	return created, nil
}

// oldEnd is a veth end Extend put into an old node's namespace.
type oldEnd struct{ ns, iface string }

func oldEnds(u *topologies.Topology, existing []string, first int, l topologies.Link) []oldEnd {
	var out []oldEnd
	for _, r := range []topologies.PortRef{l.A, l.B} {
		if r.Node < first {
			out = append(out, oldEnd{existing[r.Node], PortIface(r.Port)})
		}
	}
	return out
}

// unplug deletes the given veth ends, and with each its peer, at once. A
// deleted namespace's interfaces go away only when the kernel gets round to
// it, so an old node's end of a removed link would linger for a while
// (a port the harness could not cable again yet) if it were left to that.
func unplug(ends []oldEnd) error {
	var errs []error
	for _, e := range ends {
		err := Do(e.ns, func() error {
			l, err := netlink.LinkByName(e.iface)
			if err != nil {
				var nf netlink.LinkNotFoundError
				if errors.As(err, &nf) {
					return nil
				}
				return err
			}
			return netlink.LinkDel(l)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("deleting %s in %s: %w", e.iface, e.ns, err))
		}
	}
	return errors.Join(errs...)
}

// Retract undoes a successful Extend(name, u, existing, first) that
// returned created: the veth ends in the old nodes' namespaces go at once,
// then the new namespaces. Processes in them must have been stopped.
func Retract(name string, u *topologies.Topology, existing []string, first int, created []string) error {
	if len(existing) != first || first > u.NumNodes() {
		return fmt.Errorf("fabricnet: %d namespaces for %d existing nodes of %d", len(existing), first, u.NumNodes())
	}
	var ends []oldEnd
	for _, l := range u.Links() {
		if (l.A.Node < first) != (l.B.Node < first) {
			ends = append(ends, oldEnds(u, existing, first, l)...)
		}
	}
	return errors.Join(unplug(ends), RemoveOnly(name, created))
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
