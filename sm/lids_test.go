package sm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm"
	"ibfab/topologies"
)

// TestStableLIDs restarts the SM with its LID file on another CA and on a
// fabric that lost a node: every port keeps its LID, although discovery
// meets the nodes in another order, and a new port gets a LID no one
// holds.
func TestStableLIDs(t *testing.T) {
	file := filepath.Join(t.TempDir(), "guid2lid")
	b := newBench(t, topologies.Thesis8(), 0, 1)
	res := b.sweep(t, b.newSM(t, sm.Config{LIDConfig: sm.LIDConfig{LIDFile: file}}))
	require.True(t, res.SubnetUp, res.Reason)
	lids := agentLIDs(b.f)
	m, err := sm.LoadLIDMap(file)
	require.NoError(t, err)
	assert.Equal(t, 15, m.Len())

	// Another SM, on CA 15 at the far end, with the file.
	topo := topologies.Thesis8()
	ca15, _ := topo.Lookup("ca15")
	b2 := newBench(t, topo, ca15, 1)
	res = b2.sweep(t, b2.newSM(t, sm.Config{LIDConfig: sm.LIDConfig{LIDFile: file}}))
	require.True(t, res.SubnetUp, res.Reason)
	assert.Equal(t, lids, agentLIDs(b2.f))
	checkUp(t, b2.f)

	// Without the file the LIDs follow discovery order.
	b3 := newBench(t, topo, ca15, 1)
	res = b3.sweep(t, b3.newSM(t, sm.Config{}))
	require.True(t, res.SubnetUp, res.Reason)
	assert.NotEqual(t, lids, agentLIDs(b3.f))
	assert.EqualValues(t, 1, agentLIDs(b3.f)["ca15"])

	// A fabric where ca7 is a new node with another GUID: the others keep
	// their LIDs, ca7 takes the lowest LID nobody holds, past the 15.
	b4 := newBench(t, topologies.Thesis8(), 0, 1)
	require.NoError(t, os.WriteFile(file, []byte(strings.ReplaceAll(mustRead(t, file),
		"0x02fab00000000701", "0x02fab0000000ff01")), 0o600))
	res = b4.sweep(t, b4.newSM(t, sm.Config{LIDConfig: sm.LIDConfig{LIDFile: file}}))
	require.True(t, res.SubnetUp, res.Reason)
	got := agentLIDs(b4.f)
	assert.EqualValues(t, 16, got["ca7"])
	delete(got, "ca7")
	want := map[string]uint16{}
	for k, v := range lids {
		if k != "ca7" {
			want[k] = v
		}
	}
	assert.Equal(t, want, got)
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestNewSMBadLIDFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "guid2lid")
	require.NoError(t, os.WriteFile(file, []byte("0x10 1 1\n0x11 1 1\n"), 0o600))
	b := newBench(t, topologies.Thesis8(), 0, 1)
	_, err := sm.New(b.port, sm.Config{LIDConfig: sm.LIDConfig{LIDFile: file}})
	assert.ErrorIs(t, err, sm.ErrLIDFile)
}
