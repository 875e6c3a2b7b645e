package sm_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm"
	"ibfab/topologies"
)

func TestReadLIDMap(t *testing.T) {
	good := "# a comment\n\n0x0002fab000000400 0x0001 0x0001\n0x10 8 11\n  0x11 0x2 0x2  \n"
	m, err := sm.ReadLIDMap(strings.NewReader(good))
	require.NoError(t, err)
	assert.Equal(t, 3, m.Len())
	base, n, ok := m.Lookup(0x10)
	assert.True(t, ok)
	assert.EqualValues(t, 8, base)
	assert.Equal(t, 4, n)

	var b bytes.Buffer
	_, err = m.WriteTo(&b)
	require.NoError(t, err)
	again, err := sm.ReadLIDMap(&b)
	require.NoError(t, err)
	assert.Equal(t, m, again, "round trip")

	tests := []struct{ name, in, want string }{
		{"two fields", "0x10 1\n", "line 1: want GUID"},
		{"bad GUID", "# x\nzz 1 1\n", "line 2: bad GUID"},
		{"zero GUID", "0 1 1\n", "bad GUID"},
		{"LID 0", "0x10 0 0\n", "bad LID range"},
		{"reversed", "0x10 5 4\n", "bad LID range"},
		{"multicast", "0x10 0xc000 0xc000\n", "bad LID range"},
		{"not a power of two", "0x10 4 6\n", "not an aligned block"},
		{"misaligned", "0x10 2 5\n", "not an aligned block"},
		{"GUID twice", "0x10 1 1\n0x10 2 2\n", "line 2: GUID 0x10 listed twice"},
		{"LID twice", "0x10 4 7\n0x11 6 6\n", "line 2: LID 6 already belongs to GUID 0x10"},
		{"long line", strings.Repeat("x", 70000), "line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sm.ReadLIDMap(strings.NewReader(tt.in))
			require.ErrorIs(t, err, sm.ErrLIDFile)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func FuzzReadLIDMap(f *testing.F) {
	f.Add("0x0002fab000000400 0x0001 0x0001\n")
	f.Add("# c\n0x10 8 11\n0x11 2 2\n")
	f.Add("0x10 4 7\n0x11 6 6\n")
	f.Add("0x10 0xbfff 0xbfff\n")
	f.Fuzz(func(t *testing.T, in string) {
		m, err := sm.ReadLIDMap(strings.NewReader(in))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if _, err := m.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		again, err := sm.ReadLIDMap(&b)
		if err != nil {
			t.Fatalf("reading back what we wrote: %v\n%s", err, b.String())
		}
		if again.Len() != m.Len() {
			t.Fatalf("%d GUIDs, %d after a round trip", m.Len(), again.Len())
		}
	})
}

func TestLoadLIDMap(t *testing.T) {
	dir := t.TempDir()
	m, err := sm.LoadLIDMap(filepath.Join(dir, "missing"))
	require.NoError(t, err)
	assert.Zero(t, m.Len())
	bad := filepath.Join(dir, "bad")
	require.NoError(t, os.WriteFile(bad, []byte("0x1 2\n"), 0o600))
	_, err = sm.LoadLIDMap(bad)
	assert.ErrorIs(t, err, sm.ErrLIDFile)
	assert.Contains(t, err.Error(), bad)
}

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
