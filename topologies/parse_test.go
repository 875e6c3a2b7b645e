package topologies_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/topologies"
)

// netExamplesDir holds the example net files of Debian's ibsim-utils, which
// the Makefile installs.
const netExamplesDir = "/usr/share/doc/ibsim-utils/net-examples"

var netExamples = []string{"net", "net.1", "net.2sw2path", "net.2sw2path4hca", "net.2sw2path4hca2port"}

func parseString(t *testing.T, s string) (*topologies.Topology, error) {
	t.Helper()
	return topologies.Parse(strings.NewReader(s), "test.net")
}

func mustParse(t *testing.T, s string) *topologies.Topology {
	t.Helper()
	tp, err := parseString(t, s)
	require.NoError(t, err, "Parse(%q)", s)
	return tp
}

// guidGraph describes a topology by GUIDs: node GUID -> type, ports and
// description, and each link as "guidA[pa]-guidB[pb] rate", so topologies
// that name their nodes differently compare equal.
type guidGraph struct {
	Nodes map[uint64]string
	Links map[string]bool
}

func byGUID(tp *topologies.Topology) guidGraph {
	g := guidGraph{Nodes: map[uint64]string{}, Links: map[string]bool{}}
	for _, n := range tp.Nodes() {
		g.Nodes[n.GUID] = n.Type.String() + " " + itoa(n.NumPorts) + " " + n.Description
	}
	for _, l := range tp.Links() {
		a, b := tp.Node(l.A.Node), tp.Node(l.B.Node)
		ea := hex(a.GUID) + "[" + itoa(l.A.Port) + "]"
		eb := hex(b.GUID) + "[" + itoa(l.B.Port) + "]"
		if eb < ea {
			ea, eb = eb, ea
		}
		g.Links[ea+"-"+eb+" "+l.Width.String()+l.Speed.String()] = true
	}
	return g
}

// TestParseNetExamples checks every example ibsim ships against what
// ibnetdiscover found when ibsim ran that example (testdata/ibnetdiscover,
// captured from ibsim 0.10 and infiniband-diags 44): the GUIDs we assign
// must be ibsim's, the links and rates the discovered ones.
func TestParseNetExamples(t *testing.T) {
	for _, name := range netExamples {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(netExamplesDir, name)
			_, err := os.Stat(path)
			require.NoError(t, err, "ibsim's examples are missing: install ibsim-utils (make debs)")
			ours, err := topologies.ParseFile(path)
			require.NoError(t, err)
			disc, err := topologies.ParseFile(filepath.Join("testdata", "ibnetdiscover", name+".txt"))
			require.NoError(t, err)
			want, got := byGUID(disc), byGUID(ours)
			assert.Equal(t, want, got, "ParseFile(%s) by GUID (-ibnetdiscover +ours)", name)
		})
	}
}

// TestParseIbnetdiscoverVariants parses the plain, -f (full) and -g
// (grouped) outputs of one discovery; they describe the same fabric.
func TestParseIbnetdiscoverVariants(t *testing.T) {
	base, err := topologies.ParseFile("testdata/ibnetdiscover/net.2sw2path4hca.txt")
	require.NoError(t, err)
	require.Equal(t, 2, base.Count(topologies.Switch))
	require.Equal(t, 4, base.Count(topologies.CA))
	require.Equal(t, 6, base.NumLinks())
	for _, v := range []string{"full", "grouped"} {
		t.Run(v, func(t *testing.T) {
			got, err := topologies.ParseFile("testdata/ibnetdiscover/net.2sw2path4hca-" + v + ".txt")
			require.NoError(t, err)
			assert.True(t, base.Equal(got), "ParseFile(%s) differs from the plain output", v)
		})
	}
	// The discovered names are ibnetdiscover's, the descriptions ibsim's ids.
	i, ok := base.Lookup("S-0000000000200000")
	require.True(t, ok)
	n := base.Node(i)
	assert.Equal(t, "Switch1", n.Description)
	assert.Equal(t, uint64(0x200000), n.GUID)
	assert.Equal(t, 8, n.NumPorts)
	ref, ok := base.LookupPortGUID(0x100007)
	require.True(t, ok)
	assert.Equal(t, "H-0000000000100006", base.Node(ref.Node).Name)
	assert.Equal(t, 1, ref.Port)
	peer, ok := base.Peer(ref)
	require.True(t, ok)
	assert.Equal(t, topologies.PortRef{Node: i, Port: 2}, peer)
}

func TestParseDetails(t *testing.T) {
	const file = `# leading comment
vendid=0x2c9
devid=4099
sysimgguid=0x1234
switchguid=0xabc0000000000100(abc0000000000100)	# trailing comment
Switch	36 "S-abc0000000000100"		# "leaf 1" enhanced port 0 lid 7 lmc 1
[1][ext 17]	"H-abc0000000001000"[1](abc0000000001001) 		# "host a" lid 3 4xQDR
[2]	"rtr"[2]	w=8 s=2		# "router" lid 0 12xDDR
  [3]   "S-abc0000000000100"[4]   # loopback cable
[4]	"S-abc0000000000100"[3]
do start
caguid=0xabc0000000001000
Ca	2 "H-abc0000000001000"		# "host a"
[1](abc0000000001001) 	"S-abc0000000000100"[1][ext 17]		# lid 3 lmc 2 "leaf 1" lid 7 4xQDR

rtguid=0x77
Rt	2 "rtr"	# rtr without quotes lid 9
[2](99)	"S-abc0000000000100"[2]	w=8 s=2
`
	tp := mustParse(t, file)
	sw, ok := tp.Lookup("S-abc0000000000100")
	require.True(t, ok)
	s := tp.Node(sw)
	assert.Equal(t, topologies.Switch, s.Type)
	assert.Equal(t, "leaf 1", s.Description)
	assert.Equal(t, uint64(0xabc0000000000100), s.GUID)
	assert.Equal(t, uint64(0x1234), s.SystemImageGUID)
	assert.Equal(t, uint32(0x2c9), s.VendorID)
	assert.Equal(t, uint32(4099), s.DeviceID)
	assert.True(t, s.EnhancedPort0)
	assert.Equal(t, uint16(7), s.Ports[0].LID)
	assert.Equal(t, uint8(1), s.Ports[0].LMC)
	assert.Equal(t, 17, s.Ports[1].Ext)
	assert.Equal(t, uint64(0xabc0000000000100), s.Ports[0].GUID)

	ca, ok := tp.LookupGUID(0xabc0000000001000)
	require.True(t, ok)
	c := tp.Node(ca)
	assert.Equal(t, "host a", c.Description)
	// sysimgguid= and vendid= apply to one node, devid= to all later ones.
	assert.Equal(t, c.GUID, c.SystemImageGUID)
	assert.Equal(t, uint32(0), c.VendorID)
	assert.Equal(t, uint32(4099), c.DeviceID)
	assert.Equal(t, uint16(3), c.Ports[1].LID)
	assert.Equal(t, uint8(2), c.Ports[1].LMC)
	assert.Equal(t, uint64(0xabc0000000001001), c.Ports[1].GUID)
	assert.Equal(t, uint64(0xabc0000000001002), c.Ports[2].GUID, "unlisted CA port GUID is node GUID + port")

	rt, ok := tp.Lookup("rtr")
	require.True(t, ok)
	r := tp.Node(rt)
	assert.Equal(t, "rtr without quotes", r.Description)
	assert.Equal(t, uint64(0x77), r.GUID)
	assert.Equal(t, uint64(0x99), r.Ports[2].GUID)

	tests := []struct {
		name  string
		port  topologies.PortRef
		peer  topologies.PortRef
		width topologies.Width
		speed topologies.Speed
	}{
		{"comment rate", topologies.PortRef{Node: sw, Port: 1}, topologies.PortRef{Node: ca, Port: 1}, topologies.Width4x, topologies.SpeedQDR},
		// The switch's comment enables 1x|4x|12x and SDR|DDR; the router's
		// options w=8 (12x) s=2 (DDR).
		{"options", topologies.PortRef{Node: sw, Port: 2}, topologies.PortRef{Node: rt, Port: 2}, topologies.Width12x, topologies.SpeedDDR},
		{"defaults", topologies.PortRef{Node: sw, Port: 3}, topologies.PortRef{Node: sw, Port: 4}, topologies.Width4x, topologies.SpeedSDR},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, ok := tp.LinkAt(tt.port)
			require.True(t, ok)
			peer, _ := tp.Peer(tt.port)
			assert.Equal(t, tt.peer, peer)
			assert.Equal(t, tt.width, l.Width, "width")
			assert.Equal(t, tt.speed, l.Speed, "speed")
		})
	}
	assert.Equal(t, 3, tp.NumLinks())
}

// TestParseRates checks how the two ends' enabled widths and speeds combine,
// as ibsim combines them.
func TestParseRates(t *testing.T) {
	const tmpl = "Switch 4 \"a\"\n[1] \"b\"[1] A\n\nSwitch 4 \"b\"\n[1] \"a\"[1] B\n"
	tests := []struct {
		name   string
		a, b   string
		width  topologies.Width
		speed  topologies.Speed
		hasErr bool
	}{
		{"defaults", "", "", topologies.Width4x, topologies.SpeedSDR, false},
		{"w=12 both", "w=12", "w=12", topologies.Width12x, topologies.SpeedSDR, false},
		{"w=12 one end", "w=12", "", 0, 0, true}, // 8x|12x & 4x: ibsim panics too
		{"w=3 and default", "w=3", "", topologies.Width4x, topologies.SpeedSDR, false},
		{"w=1", "w=1", "w=3", topologies.Width1x, topologies.SpeedSDR, false},
		{"s=7 and s=3", "s=7", "s=3", topologies.Width4x, topologies.SpeedDDR, false},
		{"s=4 and default", "s=4", "", 0, 0, true},
		{"comment 12xQDR both", "# \"b\" lid 0 12xQDR", "# \"a\" lid 0 12xQDR", topologies.Width12x, topologies.SpeedQDR, false},
		{"comment 12x vs 4x", "# \"b\" lid 0 12xQDR", "# \"a\" lid 0 4xDDR", topologies.Width4x, topologies.SpeedDDR, false},
		{"comment 8x both", "# \"b\" lid 0 8xSDR", "# \"a\" lid 0 8xSDR", topologies.Width8x, topologies.SpeedSDR, false},
		{"comment 8x vs 4x", "# \"b\" lid 0 8xSDR", "# \"a\" lid 0 4xSDR", 0, 0, true},
		{"comment FDR both", "# \"b\" lid 0 4xFDR", "# \"a\" lid 0 4xFDR", topologies.Width4x, topologies.SpeedFDR, false},
		{"comment EDR vs FDR10", "# \"b\" lid 0 4xEDR", "# \"a\" lid 0 4xFDR10", topologies.Width4x, topologies.SpeedFDR10, false},
		{"comment NDR both", "# \"b\" lid 0 4xNDR", "# \"a\" lid 0 4xNDR", topologies.Width4x, topologies.SpeedNDR, false},
		{"e=1 and comment FDR", "s=7 e=1", "# \"a\" lid 0 4xFDR", topologies.Width4x, topologies.SpeedFDR, false},
		{"comment overrides option", "w=8 # \"b\" lid 0 4xSDR", "", topologies.Width4x, topologies.SpeedSDR, false},
		{"full output options", "# \"b\" lid 0 1xDDR s=2 w=1 v=4", "# \"a\" lid 0 1xDDR s=2 w=1 v=4", topologies.Width1x, topologies.SpeedDDR, false},
		{"free comment", "# spare cable", "", topologies.Width4x, topologies.SpeedSDR, false},
		{"unknown rate", "# \"b\" lid 0 4x???", "", 0, 0, true},
		{"bad width option", "w=32", "", 0, 0, true},
		{"bad speed option", "s=0", "", 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := strings.NewReplacer("A", tt.a, "B", tt.b).Replace(tmpl)
			tp, err := parseString(t, file)
			if tt.hasErr {
				require.ErrorIs(t, err, topologies.ErrRate, "Parse(%q)", file)
				return
			}
			require.NoError(t, err, "Parse(%q)", file)
			l := tp.Links()[0]
			assert.Equal(t, tt.width, l.Width, "Parse(%q) width", file)
			assert.Equal(t, tt.speed, l.Speed, "Parse(%q) speed", file)
		})
	}
}

// TestParseGUIDCounters checks ibsim's GUID assignment for nodes without
// their own GUID line.
func TestParseGUIDCounters(t *testing.T) {
	const file = `Switch 4 "s1"
[1] "c1"[1]

Ca 2 "c1"
[1] "s1"[1]

Switch 4 "s2"

Ca 3 "c2"

switchguid=0x50
Switch 4 "s3"

Switch 4 "s4"

switchguid+0x5
Switch 4 "s5"

caguid=0x1000
Hca 1 "c3"

Ca 1 "c4"
`
	tp := mustParse(t, file)
	want := map[string]uint64{
		"s1": 0x200000, "s2": 0x200001, "s3": 0x50, "s4": 0x51, "s5": 0x55,
		"c1": 0x100000, "c2": 0x100003, "c3": 0x1000, "c4": 0x1002,
	}
	for name, g := range want {
		i, ok := tp.Lookup(name)
		require.True(t, ok, name)
		assert.Equal(t, g, tp.Node(i).GUID, "GUID of %s", name)
	}
}

func TestParseErrors(t *testing.T) {
	const ok2 = "Switch 4 \"a\"\n[1] \"b\"[1]\n\nSwitch 4 \"b\"\n[1] \"a\"[1]\n"
	tests := []struct {
		name string
		file string
		want error
		line int
	}{
		{"dangling link", "Switch 4 \"a\"\n[1] \"nowhere\"[1]\n", topologies.ErrDanglingLink, 2},
		{"port zero", "Switch 4 \"a\"\n[0] \"b\"[1]\n", topologies.ErrPortRange, 2},
		{"port above count", ok2 + "\nSwitch 2 \"c\"\n[3] \"a\"[2]\n", topologies.ErrPortRange, 8},
		{"peer port above count", "Switch 4 \"a\"\n[1] \"b\"[9]\n\nSwitch 4 \"b\"\n[1] \"a\"[1]\n", topologies.ErrPortRange, 2},
		{"peer port zero", "Switch 4 \"a\"\n[1] \"b\"[0]\n", topologies.ErrPortRange, 2},
		{"too many ports", "Switch 255 \"a\"\n", topologies.ErrPortRange, 1},
		{"zero ports", "Ca 0 \"a\"\n", topologies.ErrPortRange, 1},
		{"asymmetric other port", "Switch 4 \"a\"\n[1] \"b\"[2]\n\nSwitch 4 \"b\"\n[1] \"a\"[1]\n[2] \"c\"[1]\n\nCa 1 \"c\"\n[1] \"b\"[2]\n", topologies.ErrAsymmetric, 2},
		{"asymmetric missing", "Switch 4 \"a\"\n[1] \"b\"[1]\n\nSwitch 4 \"b\"\n", topologies.ErrAsymmetric, 2},
		{"self port", "Switch 4 \"a\"\n[1] \"a\"[1]\n", topologies.ErrAsymmetric, 2},
		{"duplicate name", ok2 + "\nCa 1 \"a\"\n", topologies.ErrDuplicateName, 7},
		{"duplicate GUID", "switchguid=0x10\nSwitch 4 \"a\"\n\nswitchguid=0x10\nSwitch 4 \"b\"\n", topologies.ErrDuplicateGUID, 5},
		{"node GUID is a port GUID", "caguid=0x10\nCa 2 \"a\"\n\nswitchguid=0x11\nSwitch 4 \"b\"\n", topologies.ErrDuplicateGUID, 5},
		{"duplicate port GUID", "Ca 2 \"a\"\n[1](77) \"b\"[1]\n\nCa 2 \"b\"\n[1](77) \"a\"[1]\n", topologies.ErrDuplicateGUID, 4},
		{"router without GUID", "Rt 1 \"r\"\n", topologies.ErrInvalid, 1},
		{"port listed twice", "Switch 4 \"a\"\n[1] \"b\"[1]\n[1] \"b\"[2]\n", topologies.ErrSyntax, 3},
		{"port line outside record", "[1] \"b\"[1]\n", topologies.ErrSyntax, 1},
		{"port line after blank", ok2 + "\n[2] \"b\"[2]\n", topologies.ErrSyntax, 7},
		{"unknown line", "Switch 4 \"a\"\n\nswitch 4 \"b\"\n", topologies.ErrSyntax, 3},
		{"header without name", "Switch 4 a\n", topologies.ErrSyntax, 1},
		{"header without ports", "Switch \"a\"\n", topologies.ErrSyntax, 1},
		{"unterminated name", "Switch 4 \"a\n", topologies.ErrSyntax, 1},
		{"junk after name", "Switch 4 \"a\" junk\n", topologies.ErrSyntax, 1},
		{"junk after peer", "Switch 4 \"a\"\n[1] \"b\"[1] junk\n", topologies.ErrSyntax, 2},
		{"bad port number", "Switch 4 \"a\"\n[x] \"b\"[1]\n", topologies.ErrSyntax, 2},
		{"switch port GUID", "Switch 4 \"a\"\n[1](12) \"b\"[1]\n", topologies.ErrSyntax, 2},
		{"bad GUID", "Ca 1 \"a\"\n[1](xyz) \"b\"[1]\n", topologies.ErrSyntax, 2},
		{"bad guid line", "switchguid 0x10\n", topologies.ErrSyntax, 1},
		{"bad guid number", "caguid=0xzz\n", topologies.ErrSyntax, 1},
		{"bad vendid", "vendid=abc\n", topologies.ErrSyntax, 1},
		{"width out of range", "width=0\n", topologies.ErrRate, 1},
		{"speed out of range", "speed=8\n", topologies.ErrRate, 1},
		{"name with hash", "Switch 4 \"a#b\"\n", topologies.ErrInvalid, 1},
		{"description too long", "Switch 4 \"a\" # \"" + strings.Repeat("d", 65) + "\"\n", topologies.ErrInvalid, 1},
		{"lmc too big", "Switch 4 \"a\" # \"a\" lid 1 lmc 8\n", topologies.ErrSyntax, 1},
		{"alias", "Switch 4 \"a\"\n@[1] \"x\"\n", topologies.ErrSyntax, 2},
		{"module", "module=\"m\"\n", topologies.ErrSyntax, 1},
		{"include without a file system", "include \"other\"\n", topologies.ErrInclude, 1},
		{"line too long", strings.Repeat("#", 70000) + "\n", topologies.ErrSyntax, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, err := parseString(t, tt.file)
			require.Nil(t, tp)
			require.ErrorIs(t, err, tt.want, "Parse(%q) = %v, want %v", clip(tt.file), err, tt.want)
			var pe *topologies.ParseError
			require.True(t, errors.As(err, &pe), "Parse(%q) = %T, want *ParseError", clip(tt.file), err)
			assert.Equal(t, "test.net", pe.File)
			assert.Equal(t, tt.line, pe.Line, "Parse(%q) = %v, want line %d", clip(tt.file), err, tt.line)
			assert.True(t, strings.HasPrefix(err.Error(), "test.net:"+itoa(tt.line)+": "), "error %q names file and line", err)
		})
	}
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

func TestParseInclude(t *testing.T) {
	fsys := fstest.MapFS{
		"top.net":         {Data: []byte("Switch 4 \"a\"\n[1] \"b\"[1]\ninclude \"sub/b.net\"\n")},
		"sub/b.net":       {Data: []byte("# included\ninclude c.net\n\nSwitch 4 \"b\"\n[1] \"a\"[1]\n[2] \"c\"[1]\n")},
		"sub/c.net":       {Data: []byte("Ca 1 \"c\"\n[1] \"b\"[2]\n")},
		"loop.net":        {Data: []byte("include \"loop2.net\"\n")},
		"loop2.net":       {Data: []byte("\ninclude \"loop.net\"\n")},
		"bad.net":         {Data: []byte("include \"sub/bad.net\"\n")},
		"sub/bad.net":     {Data: []byte("Switch 4 \"a\"\n[9] \"b\"[1]\n")},
		"missing.net":     {Data: []byte("include \"nothere.net\"\n")},
		"escape.net":      {Data: []byte("include \"../x.net\"\n")},
		"sub/dangling.ok": {Data: []byte("Ca 1 \"z\"\n[1] \"y\"[1]\n")},
	}
	tp, err := topologies.ParseFS(fsys, "top.net")
	require.NoError(t, err)
	assert.Equal(t, 3, tp.NumNodes())
	assert.Equal(t, 2, tp.NumLinks())

	tests := []struct {
		name string
		file string
		want error
		at   string
	}{
		{"cycle", "loop.net", topologies.ErrInclude, "loop2.net:2"},
		{"error inside include", "bad.net", topologies.ErrPortRange, "sub/bad.net:2"},
		{"missing file", "missing.net", topologies.ErrInclude, "missing.net:1"},
		{"outside the file system", "escape.net", topologies.ErrInclude, "escape.net:1"},
		{"dangling across files", "sub/dangling.ok", topologies.ErrDanglingLink, "sub/dangling.ok:2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := topologies.ParseFS(fsys, tt.file)
			require.ErrorIs(t, err, tt.want)
			assert.True(t, strings.HasPrefix(err.Error(), tt.at+": "), "ParseFS(%s) = %v, want it at %s", tt.file, err, tt.at)
		})
	}

	// ParseFile resolves includes relative to the including file too.
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	for _, name := range []string{"top.net", "sub/b.net", "sub/c.net"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), fsys[name].Data, 0o644))
	}
	got, err := topologies.ParseFile(filepath.Join(dir, "top.net"))
	require.NoError(t, err)
	assert.True(t, tp.Equal(got), "ParseFile and ParseFS disagree")
}
