package fabricnet_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/fabricnet"
	"ibfab/internal/testsupport/testenv"
	"ibfab/topologies"
)

// TestExtend adds thesis8's piece to a running thesis8: the new namespaces
// and every link, also those into old nodes' namespaces, are plumbed as
// Create would have done for the whole; a failure (a namespace that exists)
// leaves the old fabric as it was.
func TestExtend(t *testing.T) {
	testenv.RequireRoot(t)
	name := fabricName(t, 30)
	base := topologies.Thesis8()
	f := create(t, name, base)
	u, err := base.Extend(topologies.Thesis8AddPiece())
	require.NoError(t, err)

	created, err := fabricnet.Extend(name, u, f.Namespaces, base.NumNodes())
	require.NoError(t, err)
	want := []string{fabricnet.Namespace(name, "sw16"), fabricnet.Namespace(name, "ca17"), fabricnet.Namespace(name, "ca18")}
	assert.Equal(t, want, created)
	all := &fabricnet.Fabric{Name: name, Namespaces: append(append([]string(nil), f.Namespaces...), created...)}
	checkPlumbing(t, all, u)

	// Retracting the piece leaves the base's plumbing, at once.
	require.NoError(t, fabricnet.Retract(name, u, f.Namespaces, base.NumNodes(), created))
	checkPlumbing(t, f, base)
	// And it can be added again straight away.
	created, err = fabricnet.Extend(name, u, f.Namespaces, base.NumNodes())
	require.NoError(t, err)
	checkPlumbing(t, all, u)
	require.NoError(t, fabricnet.Retract(name, u, f.Namespaces, base.NumNodes(), created))
	checkPlumbing(t, f, base)

	// A new node whose namespace exists: nothing is made.
	_, err = fabricnet.Extend(name, u, f.Namespaces[:3], 3)
	require.ErrorContains(t, err, "exists")
	_, err = fabricnet.Extend(name, u, f.Namespaces[:2], 3)
	require.ErrorContains(t, err, "namespaces for 3 existing nodes")
	checkPlumbing(t, f, base)
	left, err := fabricnet.Namespaces(name)
	require.NoError(t, err)
	assert.Len(t, left, base.NumNodes())

	assert.ErrorContains(t, fabricnet.RemoveOnly(name, []string{"ibf-other-sw1"}), "refusing")
}
