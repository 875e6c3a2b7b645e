package fabricnet

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"ibfab/topologies"
)

// netnsDir is where iproute2 and vishvananda/netns keep named namespaces.
const netnsDir = "/run/netns"

// MTU of every port veth: a 4096-byte IBA MTU packet with a GRH is 4170
// bytes; 9000 leaves room and is the usual jumbo size.
const MTU = 9000

// Fabric is a fabric's plumbing as created: which namespace each node got.
type Fabric struct {
	Name       string
	Namespaces []string // index = node index in the topology
	// Hosts are the host namespaces of a fabric over hosts
	// (CreateOnHosts), by host; Cut the indices of the links between
	// hosts, VXLAN devices.
	Hosts []string
	Cut   []int
}

// plan names the namespace of each node of t, and fails when two nodes get
// one or a namespace exists.
func plan(name string, t *topologies.Topology) (*Fabric, error) {
	f := &Fabric{Name: name}
	seen := map[string]string{}
	for _, n := range t.Nodes() {
		ns := Namespace(name, n.Name)
		if other, dup := seen[ns]; dup {
			return nil, fmt.Errorf("nodes %q and %q both map to namespace %s", other, n.Name, ns)
		}
		seen[ns] = n.Name
		if namespaceExists(ns) {
			return nil, fmt.Errorf("namespace %s exists: is fabric %q up? (ibfab down --name %s)", ns, name, name)
		}
		f.Namespaces = append(f.Namespaces, ns)
	}
	return f, nil
}

func namespaceExists(ns string) bool {
	_, err := os.Stat(filepath.Join(netnsDir, ns))
	return err == nil
}

// Create makes one namespace per node of t and one veth pair per link,
// both ends up. On error it removes what it made. progress, when not nil,
// is called after each node and each link with counts done and total.
func Create(name string, t *topologies.Topology, progress func(done, total int)) (*Fabric, error) {
	if err := CheckFabricName(name); err != nil {
		return nil, err
	}
	return build(name, t, nil, 0, progress)
}

// NewNamespace creates the named namespace with loopback up and IPv6 off
// (no router solicitations or MLD reports on the port veths), and returns
// a handle to it.
func NewNamespace(name string) (h netns.NsHandle, err error) {
	if err := shareNetnsDir(); err != nil {
		return netns.None(), err
	}
	err = onFreshThread(func() error {
		if h, err = netns.NewNamed(name); err != nil { // also moves this thread into it
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
		for _, f := range []string{"all", "default"} {
			// Sysctls under /proc/sys/net follow the opener's namespace.
			p := "/proc/sys/net/ipv6/conf/" + f + "/disable_ipv6"
			if err := os.WriteFile(p, []byte("1"), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("namespace %s: disabling IPv6: %w", name, err)
			}
		}
		lo, err := netlink.LinkByName("lo")
		if err == nil {
			err = netlink.LinkSetUp(lo)
		}
		if err != nil {
			return fmt.Errorf("namespace %s: loopback up: %w", name, err)
		}
		return nil
	})
	if err != nil && h.IsOpen() {
		h.Close()
		h = netns.None()
	}
	return h, err
}

// shareNetnsDir makes netnsDir a shared mount point, as iproute2's `ip
// netns add` does before its first namespace. Otherwise the first `ip
// netns add` after ours bind-mounts the directory over itself and hides
// the mounts that hold our namespaces: they can no longer be unmounted
// through their paths, and removing them fails with EBUSY.
func shareNetnsDir() error {
	if err := os.MkdirAll(netnsDir, 0o755); err != nil {
		return err
	}
	for bound := false; ; bound = true {
		err := unix.Mount("", netnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EINVAL) || bound {
			return fmt.Errorf("making %s a shared mount: %w", netnsDir, err)
		}
		// EINVAL: not a mount point yet.
		if err := unix.Mount(netnsDir, netnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mounting %s on itself: %w", netnsDir, err)
		}
	}
}

// onFreshThread runs f on an OS thread of its own, which f may move into
// another namespace. Afterwards the thread goes back to the namespace it
// came from and is unlocked; if that fails it stays locked, so that the
// runtime retires it when the goroutine ends instead of reusing a thread in
// the wrong namespace. Restoring matters: the goroutine may have run on the
// main thread, which the runtime cannot retire, and whose namespace is the
// one /proc/<pid>/ns/net shows for the whole process.
func onFreshThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- fmt.Errorf("current namespace: %w", err)
			return
		}
		defer orig.Close()
		ferr := f()
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		errc <- ferr
	}()
	return <-errc
}

// AddVeth creates the veth pair nameA (in a) - nameB (in b) with MTU MTU,
// both ends up, and with interface indexes that differ. The kernel's link
// watch reports a carrier change of a veth end at once ("urgent") only
// when the index of its peer, in the other namespace, differs from its
// own; otherwise it may hold the change for up to a second, and a port
// would learn late that its peer went dark. Indexes are allocated per
// namespace, so two fresh namespaces give the first pair's ends the same
// one: when that happens the pair is made again with end A at an index
// above both.
func AddVeth(a netns.NsHandle, nameA string, b netns.NsHandle, nameB string) error {
	ha, err := netlink.NewHandleAt(a)
	if err != nil {
		return err
	}
	defer ha.Close()
	hb, err := netlink.NewHandleAt(b)
	if err != nil {
		return err
	}
	defer hb.Close()
	index := 0 // the kernel's choice
	for range maxIndexTries {
		la, lb, err := addVethAt(ha, nameA, hb, nameB, b, index)
		if index != 0 && errors.Is(err, unix.EEXIST) && !linkExists(ha, nameA) {
			// The index drawn is taken in a's namespace: draw another.
			index = drawIndex(index)
			continue
		}
		if err != nil {
			return err
		}
		ia, ib := la.Attrs().Index, lb.Attrs().Index
		if ia != ib {
			return setUp(ha, la, hb, lb)
		}
		if err := ha.LinkDel(la); err != nil {
			return fmt.Errorf("veth %s: deleting to renumber: %w", nameA, err)
		}
		// B comes back at the next index of its namespace, ia+1 most likely.
		index = drawIndex(ia + 1)
	}
	return fmt.Errorf("veth %s/%s: no distinct interface indexes after %d tries", nameA, nameB, maxIndexTries)
}

// drawIndex picks an interface index above prev for end A, at random so
// that fabrics created at once rarely draw the same. A test replaces it.
var drawIndex = func(prev int) int { return prev + 1 + rand.IntN(1000) }

// linkExists reports whether the namespace of h has a link named name.
func linkExists(h *netlink.Handle, name string) bool {
	_, err := h.LinkByName(name)
	return err == nil
}

// maxIndexTries bounds AddVeth's attempts at distinct indexes.
const maxIndexTries = 5

// addVethAt creates the pair, end A at index (0: any), and returns both
// ends as their namespaces see them.
func addVethAt(ha *netlink.Handle, nameA string, hb *netlink.Handle, nameB string, b netns.NsHandle, index int) (netlink.Link, netlink.Link, error) {
	v := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: nameA, MTU: MTU, Index: index},
		PeerName:      nameB,
		PeerNamespace: netlink.NsFd(int(b)),
	}
	if err := ha.LinkAdd(v); err != nil {
		return nil, nil, fmt.Errorf("creating veth %s/%s: %w", nameA, nameB, err)
	}
	la, err := ha.LinkByName(nameA)
	if err != nil {
		return nil, nil, fmt.Errorf("veth %s: %w", nameA, err)
	}
	lb, err := hb.LinkByName(nameB)
	if err != nil {
		return nil, nil, fmt.Errorf("veth %s: %w", nameB, err)
	}
	return la, lb, nil
}

// setUp gives both ends of a pair the MTU and sets them up.
func setUp(ha *netlink.Handle, la netlink.Link, hb *netlink.Handle, lb netlink.Link) error {
	for _, e := range []struct {
		h *netlink.Handle
		l netlink.Link
	}{{ha, la}, {hb, lb}} {
		var err error
		if e.l.Attrs().MTU != MTU {
			err = e.h.LinkSetMTU(e.l, MTU)
		}
		if err == nil {
			err = e.h.LinkSetUp(e.l)
		}
		if err != nil {
			return fmt.Errorf("veth %s: %w", e.l.Attrs().Name, err)
		}
	}
	return nil
}

// Remove deletes the given namespaces of fabric and any other namespace
// named with the fabric's prefix (what a crashed harness left behind).
// Deleting a namespace destroys the veth ends inside it, and with them
// their peers. Missing namespaces are not an error.
func Remove(fabric string, namespaces []string) error {
	if err := CheckFabricName(fabric); err != nil {
		return err
	}
	all := map[string]bool{}
	for _, ns := range namespaces {
		all[ns] = true
	}
	left, err := Namespaces(fabric)
	if err != nil {
		return err
	}
	for _, ns := range left {
		all[ns] = true
	}
	var errs []error
	for ns := range all {
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

// Namespaces lists the existing namespaces of fabric, sorted.
func Namespaces(fabric string) ([]string, error) {
	entries, err := os.ReadDir(netnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), fabricPrefix(fabric)) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// Do runs f on an OS thread inside namespace ns. f must not start
// goroutines that expect to stay in ns: only its own thread is there.
func Do(ns string, f func() error) error {
	h, err := netns.GetFromName(ns)
	if err != nil {
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	defer h.Close()
	return DoIn(h, f)
}

// DoIn is Do for a namespace handle. Sockets f opens stay in the
// namespace; goroutines f starts run on other threads, in the process's.
func DoIn(h netns.NsHandle, f func() error) error {
	return onFreshThread(func() error {
		if err := netns.Set(h); err != nil {
			return fmt.Errorf("entering namespace: %w", err)
		}
		return f()
	})
}
