package topologies_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/topologies"
)

func itoa(i int) string               { return strconv.Itoa(i) }
func hex(g uint64) string             { return strconv.FormatUint(g, 16) }
func ref(n, p int) topologies.PortRef { return topologies.PortRef{Node: n, Port: p} }

func TestAddNode(t *testing.T) {
	tp := topologies.New()
	first, err := tp.AddNode(topologies.Node{Type: topologies.Switch, Name: "s", NumPorts: 4, GUID: 0x100})
	require.NoError(t, err)
	s := tp.Node(first)
	assert.Equal(t, "s", s.Description, "description defaults to the name")
	assert.Equal(t, uint64(0x100), s.SystemImageGUID)
	assert.Len(t, s.Ports, 5)
	assert.Equal(t, uint64(0x100), s.Ports[0].GUID, "switch port 0 GUID is the node GUID")
	assert.Zero(t, s.Ports[1].GUID)

	c, err := tp.AddNode(topologies.Node{Type: topologies.CA, Name: "c", NumPorts: 2, GUID: 0x200, Description: "host c"})
	require.NoError(t, err)
	assert.Equal(t, uint64(0x201), tp.Node(c).Ports[1].GUID)
	assert.Equal(t, uint64(0x202), tp.Node(c).Ports[2].GUID)

	tests := []struct {
		name string
		node topologies.Node
		want error
	}{
		{"bad type", topologies.Node{Type: 9, Name: "x", NumPorts: 1, GUID: 1}, topologies.ErrInvalid},
		{"empty name", topologies.Node{Type: topologies.CA, NumPorts: 1, GUID: 1}, topologies.ErrInvalid},
		{"quote in name", topologies.Node{Type: topologies.CA, Name: `a"b`, NumPorts: 1, GUID: 1}, topologies.ErrInvalid},
		{"at in name", topologies.Node{Type: topologies.CA, Name: "a@b", NumPorts: 1, GUID: 1}, topologies.ErrInvalid},
		{"long name", topologies.Node{Type: topologies.CA, Name: string(make([]byte, 65)), NumPorts: 1, GUID: 1}, topologies.ErrInvalid},
		{"newline in description", topologies.Node{Type: topologies.CA, Name: "x", Description: "a\nb", NumPorts: 1, GUID: 1}, topologies.ErrInvalid},
		{"no ports", topologies.Node{Type: topologies.CA, Name: "x", NumPorts: 0, GUID: 1}, topologies.ErrPortRange},
		{"255 ports", topologies.Node{Type: topologies.Switch, Name: "x", NumPorts: 255, GUID: 1}, topologies.ErrPortRange},
		{"zero GUID", topologies.Node{Type: topologies.CA, Name: "x", NumPorts: 1}, topologies.ErrInvalid},
		{"duplicate name", topologies.Node{Type: topologies.CA, Name: "s", NumPorts: 1, GUID: 1}, topologies.ErrDuplicateName},
		{"duplicate node GUID", topologies.Node{Type: topologies.CA, Name: "x", NumPorts: 1, GUID: 0x100}, topologies.ErrDuplicateGUID},
		{"GUID of another's port", topologies.Node{Type: topologies.Switch, Name: "x", NumPorts: 1, GUID: 0x201}, topologies.ErrDuplicateGUID},
		{"port GUID of another node", topologies.Node{Type: topologies.CA, Name: "x", NumPorts: 1, GUID: 0xff}, topologies.ErrDuplicateGUID},
		{"wrong port slice", topologies.Node{Type: topologies.CA, Name: "x", NumPorts: 2, GUID: 0x500, Ports: make([]topologies.Port, 2)}, topologies.ErrInvalid},
		{"switch port GUID", topologies.Node{Type: topologies.Switch, Name: "x", NumPorts: 1, GUID: 0x500, Ports: []topologies.Port{{}, {GUID: 0x600}}}, topologies.ErrInvalid},
		{"lmc 8", topologies.Node{Type: topologies.CA, Name: "x", NumPorts: 1, GUID: 0x500, Ports: []topologies.Port{{}, {LMC: 8}}}, topologies.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tp.AddNode(tt.node)
			require.ErrorIs(t, err, tt.want, "AddNode(%+v) = %v, want %v", tt.node, err, tt.want)
			assert.Equal(t, 2, tp.NumNodes(), "a failed AddNode adds nothing")
		})
	}
}

// square is two switches joined twice, each with a CA: a[1]-c1, a[2]-b[2],
// a[3]-b[3], b[1]-c2.
func square(t *testing.T) *topologies.Topology {
	t.Helper()
	tp := topologies.New()
	for i, n := range []topologies.Node{
		{Type: topologies.Switch, Name: "a", NumPorts: 4, GUID: 0x10},
		{Type: topologies.Switch, Name: "b", NumPorts: 4, GUID: 0x20},
		{Type: topologies.CA, Name: "c1", NumPorts: 1, GUID: 0x30},
		{Type: topologies.CA, Name: "c2", NumPorts: 1, GUID: 0x40},
	} {
		got, err := tp.AddNode(n)
		require.NoError(t, err)
		require.Equal(t, i, got)
	}
	require.NoError(t, tp.Connect(ref(2, 1), ref(0, 1), 0, 0))
	require.NoError(t, tp.Connect(ref(1, 2), ref(0, 2), topologies.Width12x, topologies.SpeedQDR))
	require.NoError(t, tp.Connect(ref(0, 3), ref(1, 3), 0, 0))
	require.NoError(t, tp.Connect(ref(1, 1), ref(3, 1), 0, 0))
	return tp
}

func TestConnect(t *testing.T) {
	tp := square(t)
	want := []topologies.Link{
		{A: ref(0, 1), B: ref(2, 1), Width: topologies.Width4x, Speed: topologies.SpeedSDR},
		{A: ref(0, 2), B: ref(1, 2), Width: topologies.Width12x, Speed: topologies.SpeedQDR},
		{A: ref(0, 3), B: ref(1, 3), Width: topologies.Width4x, Speed: topologies.SpeedSDR},
		{A: ref(1, 1), B: ref(3, 1), Width: topologies.Width4x, Speed: topologies.SpeedSDR},
	}
	assert.Equal(t, want, tp.Links())

	tests := []struct {
		name string
		a, b topologies.PortRef
		w    topologies.Width
		s    topologies.Speed
		want error
	}{
		{"port in use", ref(0, 1), ref(1, 4), 0, 0, topologies.ErrPortInUse},
		{"port 0", ref(0, 0), ref(1, 4), 0, 0, topologies.ErrPortRange},
		{"port above count", ref(2, 2), ref(1, 4), 0, 0, topologies.ErrPortRange},
		{"no such node", ref(7, 1), ref(1, 4), 0, 0, topologies.ErrInvalid},
		{"same port", ref(0, 4), ref(0, 4), 0, 0, topologies.ErrInvalid},
		{"bad width", ref(0, 4), ref(1, 4), 3, 0, topologies.ErrRate},
		{"bad speed", ref(0, 4), ref(1, 4), 0, 3, topologies.ErrRate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tp.Connect(tt.a, tt.b, tt.w, tt.s)
			require.ErrorIs(t, err, tt.want, "Connect(%v, %v) = %v, want %v", tt.a, tt.b, err, tt.want)
			assert.Equal(t, 4, tp.NumLinks())
		})
	}

	require.NoError(t, tp.SetLinkRate(ref(1, 3), topologies.Width1x, topologies.SpeedDDR))
	l, ok := tp.LinkAt(ref(0, 3))
	require.True(t, ok)
	assert.Equal(t, topologies.Width1x, l.Width)
	assert.Equal(t, topologies.SpeedDDR, l.Speed)
	assert.ErrorIs(t, tp.SetLinkRate(ref(0, 4), topologies.Width1x, topologies.SpeedDDR), topologies.ErrInvalid)
}

func TestLookups(t *testing.T) {
	tp := square(t)
	i, ok := tp.Lookup("b")
	assert.True(t, ok)
	assert.Equal(t, 1, i)
	_, ok = tp.Lookup("zz")
	assert.False(t, ok)
	i, ok = tp.LookupGUID(0x30)
	assert.True(t, ok)
	assert.Equal(t, 2, i)
	p, ok := tp.LookupPortGUID(0x41)
	assert.True(t, ok)
	assert.Equal(t, ref(3, 1), p)
	p, ok = tp.LookupPortGUID(0x20)
	assert.True(t, ok)
	assert.Equal(t, ref(1, 0), p)
	_, ok = tp.LookupPortGUID(0x31 + 1)
	assert.False(t, ok)

	peer, ok := tp.Peer(ref(1, 2))
	assert.True(t, ok)
	assert.Equal(t, ref(0, 2), peer)
	_, ok = tp.Peer(ref(1, 4))
	assert.False(t, ok)
	_, ok = tp.Peer(ref(9, 1))
	assert.False(t, ok)

	assert.Equal(t, []int{2, 1}, tp.Neighbors(0), "neighbours in port order, parallel links once")
	assert.Equal(t, 3, tp.Degree(0))
	assert.Equal(t, 1, tp.Degree(3))
	assert.Equal(t, 2, tp.Count(topologies.Switch))
	assert.Equal(t, 2, tp.Count(topologies.CA))
	assert.Equal(t, 0, tp.Count(topologies.Router))
}

func TestDistances(t *testing.T) {
	tp := square(t)
	assert.Equal(t, []int{1, 2, 0, 3}, tp.Distances(2))
	assert.Equal(t, 3, tp.Diameter())
	assert.Equal(t, 1, tp.SwitchDiameter())
	assert.True(t, tp.Connected())

	// A CA cabled to two switches does not join them: CAs do not forward.
	tp = topologies.New()
	for _, n := range []topologies.Node{
		{Type: topologies.Switch, Name: "s1", NumPorts: 2, GUID: 0x100},
		{Type: topologies.CA, Name: "c", NumPorts: 2, GUID: 0x200},
		{Type: topologies.Switch, Name: "s2", NumPorts: 2, GUID: 0x300},
	} {
		_, err := tp.AddNode(n)
		require.NoError(t, err)
	}
	require.NoError(t, tp.Connect(ref(0, 1), ref(1, 1), 0, 0))
	require.NoError(t, tp.Connect(ref(1, 2), ref(2, 1), 0, 0))
	assert.Equal(t, []int{0, 1, -1}, tp.Distances(0))
	assert.Equal(t, []int{1, 0, 1}, tp.Distances(1))
	assert.False(t, tp.Connected())
	assert.Equal(t, -1, tp.Diameter())
	assert.Equal(t, -1, tp.SwitchDiameter())

	assert.True(t, topologies.New().Connected())
	assert.Equal(t, 0, topologies.New().Diameter())
}

func TestCloneEqual(t *testing.T) {
	tp := square(t)
	c := tp.Clone()
	require.True(t, tp.Equal(c))
	require.NoError(t, c.Connect(ref(0, 4), ref(1, 4), 0, 0))
	assert.False(t, tp.Equal(c), "Equal after adding a link to the clone")
	assert.Equal(t, 4, tp.NumLinks(), "the original is unchanged")
	c = tp.Clone()
	c.Node(0).Description = "other"
	assert.False(t, tp.Equal(c))
	assert.Equal(t, "a", tp.Node(0).Description)
}

func TestStrings(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"switch", topologies.Switch.String(), "Switch"},
		{"ca", topologies.CA.String(), "Ca"},
		{"router", topologies.Router.String(), "Rt"},
		{"bad type", topologies.NodeType(7).String(), "NodeType(7)"},
		{"12x", topologies.Width12x.String(), "12x"},
		{"bad width", topologies.Width(3).String(), "Width(3)"},
		{"FDR10", topologies.SpeedFDR10.String(), "FDR10"},
		{"NDR", topologies.SpeedNDR.String(), "NDR"},
		{"bad speed", topologies.Speed(3).String(), "Speed(3)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.got)
		})
	}
	assert.Equal(t, 12, topologies.Width12x.Lanes())
	assert.Equal(t, 0, topologies.Width(3).Lanes())
}
