package netnstest

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"ibfab/fabricnet"
	"ibfab/internal/testsupport/testenv"
)

// Prefix starts the name of every namespace, interface and process test
// code creates.
const Prefix = "ibf-t"

// MTU of the veths VethPair creates, the same as a fabric's.
const MTU = fabricnet.MTU

var seq atomic.Uint32

// Name returns a name unique to this test process and call, for a
// namespace: "ibf-t<pid>-<n><suffix>". Interface names are limited to 15
// bytes and private to their namespace, so tests name those
// fmt.Sprintf("%s%d%s", Prefix, os.Getpid(), x) with a short x instead.
func Name(suffix string) string {
	return fmt.Sprintf("%s%d-%d%s", Prefix, os.Getpid(), seq.Add(1), suffix)
}

// checkName fails t unless name carries the test prefix.
func checkName(t testing.TB, name string) {
	t.Helper()
	if !strings.HasPrefix(name, Prefix) {
		t.Fatalf("test object name %q must start with %q", name, Prefix)
	}
}

// NewNS creates the named network namespace, with loopback up and IPv6 off
// (no router solicitations or MLD reports on test veths), and deletes it in
// t.Cleanup. name must start with Prefix; a namespace of that name left by
// a crashed run of the same pid is replaced.
func NewNS(t testing.TB, name string) netns.NsHandle {
	t.Helper()
	testenv.RequireRoot(t)
	checkName(t, name)
	if err := netns.DeleteNamed(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("removing stale namespace %s: %v", name, err)
	}
	h, err := fabricnet.NewNamespace(name)
	if h.IsOpen() {
		t.Cleanup(func() {
			h.Close()
			if err := netns.DeleteNamed(name); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("deleting namespace %s: %v", name, err)
			}
		})
	}
	if err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return h
}

// Do runs f on a fresh OS thread moved into ns and returns f's error;
// see fabricnet.DoIn.
func Do(ns netns.NsHandle, f func() error) error { return fabricnet.DoIn(ns, f) }

// VethPair creates the veth pair nameA (in nsA) – nameB (in nsB) with MTU
// MTU, both ends up, and deletes it in t.Cleanup. Both names must start
// with Prefix and fit in 15 bytes.
func VethPair(t testing.TB, nsA netns.NsHandle, nameA string, nsB netns.NsHandle, nameB string) {
	t.Helper()
	testenv.RequireRoot(t)
	checkName(t, nameA)
	checkName(t, nameB)
	if err := fabricnet.AddVeth(nsA, nameA, nsB, nameB); err != nil {
		t.Fatalf("creating veth %s/%s: %v", nameA, nameB, err)
	}
	t.Cleanup(func() {
		// Deleting one end deletes both; the namespaces' removal would too,
		// but only once nothing holds them open.
		h, err := netlink.NewHandleAt(nsA)
		if err != nil {
			t.Errorf("netlink in namespace of %s: %v", nameA, err)
			return
		}
		defer h.Close()
		if l, err := h.LinkByName(nameA); err == nil {
			if err := h.LinkDel(l); err != nil {
				t.Errorf("deleting veth %s: %v", nameA, err)
			}
		}
	})
}

// SetUp sets interface name in ns up or down, as `ip link set` would.
func SetUp(ns netns.NsHandle, name string, up bool) error {
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	l, err := h.LinkByName(name)
	if err != nil {
		return err
	}
	if up {
		return h.LinkSetUp(l)
	}
	return h.LinkSetDown(l)
}
