package topologies_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/topologies"
)

// mixed is a topology that uses every feature the format carries: all
// widths and speeds, a router, parallel links, a cable between two ports of
// one switch, LIDs, external port numbers, vendor and device ids and port
// GUIDs that do not follow the node GUID.
func mixed(t *testing.T) *topologies.Topology {
	t.Helper()
	tp := topologies.New()
	nodes := []topologies.Node{
		{Type: topologies.CA, Name: "host-0", Description: `host 0 mlx5_0 \ spare`, NumPorts: 2, GUID: 0x1000,
			Ports: []topologies.Port{{}, {GUID: 0x5001, LID: 5, LMC: 2}, {}}},
		{Type: topologies.Switch, Name: "core", Description: "core switch", NumPorts: 36, GUID: 0x2000,
			SystemImageGUID: 0x9999, VendorID: 0x2c9, DeviceID: 0xc738, EnhancedPort0: true,
			Ports: func() []topologies.Port {
				p := make([]topologies.Port, 37)
				p[0].LID, p[0].LMC = 1, 0
				p[3].Ext = 12
				return p
			}()},
		{Type: topologies.Router, Name: "gw", NumPorts: 3, GUID: 0x3000, DeviceID: 7},
		{Type: topologies.CA, Name: "host-1", NumPorts: 1, GUID: 0x4000},
	}
	for _, n := range nodes {
		_, err := tp.AddNode(n)
		require.NoError(t, err)
	}
	links := []struct {
		a, b topologies.PortRef
		w    topologies.Width
		s    topologies.Speed
	}{
		{ref(0, 1), ref(1, 1), topologies.Width4x, topologies.SpeedQDR},
		{ref(0, 2), ref(1, 2), topologies.Width12x, topologies.SpeedDDR},
		{ref(1, 3), ref(3, 1), topologies.Width1x, topologies.SpeedSDR},
		{ref(1, 4), ref(2, 1), topologies.Width8x, topologies.SpeedQDR},
		{ref(1, 5), ref(2, 2), topologies.Width2x, topologies.SpeedHDR},
		{ref(1, 6), ref(1, 7), topologies.Width4x, topologies.SpeedFDR10},
		{ref(1, 8), ref(2, 3), topologies.Width4x, topologies.SpeedEDR},
	}
	for _, l := range links {
		require.NoError(t, tp.Connect(l.a, l.b, l.w, l.s))
	}
	return tp
}

func generated(t *testing.T) map[string]*topologies.Topology {
	t.Helper()
	must := func(tp *topologies.Topology, err error) *topologies.Topology {
		require.NoError(t, err)
		return tp
	}
	return map[string]*topologies.Topology{
		"thesis8":   topologies.Thesis8(),
		"irregular": must(topologies.Irregular(16, 4, 1, 7)),
		"fattree":   must(topologies.FatTree(18, 12, 24)),
		"ktree":     must(topologies.KAryNTree(3, 3)),
		"mesh":      must(topologies.Mesh(3, 4)),
		"torus":     must(topologies.Torus(3, 3, 2)),
		"mixed":     mixed(t),
	}
}

func TestWriteRoundTrip(t *testing.T) {
	for name, tp := range generated(t) {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, topologies.Write(&buf, tp))
			for i, line := range strings.Split(buf.String(), "\n") {
				// ibsim reads lines into 256-byte buffers.
				assert.Less(t, len(line), 255, "line %d is too long for ibsim", i+1)
			}
			got, err := topologies.Parse(bytes.NewReader(buf.Bytes()), name)
			require.NoError(t, err, "Parse(Write(%s))", name)
			require.Equal(t, tp.Nodes(), got.Nodes(), "Parse(Write(%s)) nodes", name)
			require.Equal(t, tp.Links(), got.Links(), "Parse(Write(%s)) links", name)
			assert.True(t, tp.Equal(got))
		})
	}
}

func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "thesis8.net")
	require.NoError(t, topologies.WriteFile(path, topologies.Thesis8()))
	got, err := topologies.ParseFile(path)
	require.NoError(t, err)
	assert.True(t, topologies.Thesis8().Equal(got))
	assert.Error(t, topologies.WriteFile(filepath.Join(t.TempDir(), "no", "such", "dir"), got))
}

// TestWriteGolden pins the layout, written by hand after ibnetdiscover's.
func TestWriteGolden(t *testing.T) {
	tp := topologies.New()
	for _, n := range []topologies.Node{
		{Type: topologies.Switch, Name: "s", NumPorts: 2, GUID: 0x20},
		{Type: topologies.CA, Name: "c", Description: "host c", NumPorts: 1, GUID: 0x10},
	} {
		_, err := tp.AddNode(n)
		require.NoError(t, err)
	}
	require.NoError(t, tp.Connect(ref(0, 2), ref(1, 1), topologies.Width4x, topologies.SpeedQDR))
	const want = "# ibfab topology: 1 switches, 1 CAs, 0 routers, 1 links\n" +
		"# ibnetdiscover format; ibsim loads it with its SM port on the first node.\n" +
		"\n" +
		"vendid=0x0\ndevid=0x0\nsysimgguid=0x10\ncaguid=0x10\n" +
		"Ca\t1 \"c\"\t\t# \"host c\"\n" +
		"[1](11) \t\"s\"[2]\t\t# lid 0 lmc 0 \"s\" lid 0 4xQDR\n" +
		"\n" +
		"vendid=0x0\ndevid=0x0\nsysimgguid=0x20\nswitchguid=0x20(20)\n" +
		"Switch\t2 \"s\"\t\t# \"s\" base port 0 lid 0 lmc 0\n" +
		"[2]\t\"c\"[1](11) \t\t# \"host c\" lid 0 4xQDR\n"
	var buf bytes.Buffer
	require.NoError(t, topologies.Write(&buf, tp))
	assert.Equal(t, want, buf.String(), "Write puts the first CA first")

	got, err := topologies.Parse(&buf, "golden")
	require.NoError(t, err)
	assert.Equal(t, "c", got.Node(0).Name)
	assert.Equal(t, byGUID(tp), byGUID(got), "reordered nodes, same fabric")
}

func BenchmarkParseFatTree(b *testing.B) {
	tp, err := topologies.FatTree(18, 12, 24)
	require.NoError(b, err)
	var buf bytes.Buffer
	require.NoError(b, topologies.Write(&buf, tp))
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := topologies.Parse(bytes.NewReader(buf.Bytes()), "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDiameterFatTree(b *testing.B) {
	tp, err := topologies.FatTree(18, 12, 24)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if d := tp.Diameter(); d != 4 {
			b.Fatalf("Diameter() = %d, want 4", d)
		}
	}
}
