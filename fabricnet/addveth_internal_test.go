package fabricnet

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"ibfab/internal/testsupport/testenv"
)

// TestAddVethIndexTaken: two fresh namespaces give a pair's ends the same
// index, so AddVeth renumbers end A; when the index it draws is taken in
// A's namespace the kernel answers EEXIST, which must make it draw again,
// not fail (a 432-host fat tree's bring-up failed so, once in CI).
func TestAddVethIndexTaken(t *testing.T) {
	testenv.RequireRoot(t)
	ns := func(suffix string) netns.NsHandle {
		name := fmt.Sprintf("ibf-t%d_idx-%s", os.Getpid(), suffix)
		h, err := NewNamespace(name)
		t.Cleanup(func() {
			h.Close()
			assert.NoError(t, netns.DeleteNamed(name))
		})
		require.NoError(t, err)
		return h
	}
	a, b := ns("a"), ns("b")
	// The same links in both namespaces, so that their next indexes agree;
	// a's holds index taken.
	const taken = 40
	ha, err := netlink.NewHandleAt(a)
	require.NoError(t, err)
	defer ha.Close()
	hb, err := netlink.NewHandleAt(b)
	require.NoError(t, err)
	defer hb.Close()
	require.NoError(t, ha.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "d0", Index: taken}, PeerName: "d1"}))
	require.NoError(t, hb.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "d0", Index: 2 * taken}, PeerName: "d1"}))

	var drawn []int
	orig := drawIndex
	t.Cleanup(func() { drawIndex = orig })
	drawIndex = func(prev int) int {
		next := taken // the first draw hits the dummy's index
		if len(drawn) > 0 {
			next = drawn[len(drawn)-1] + 1
		}
		drawn = append(drawn, next)
		return next
	}
	require.NoError(t, AddVeth(a, "p1", b, "p1"))
	assert.Equal(t, []int{taken, taken + 1}, drawn, "indexes drawn")
	la, err := ha.LinkByName("p1")
	require.NoError(t, err)
	assert.Equal(t, taken+1, la.Attrs().Index)
}
