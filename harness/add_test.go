package harness_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/topologies"
)

// pieceOf builds a piece: nodes (their GUIDs from the thesis's numbering
// unless given), links among them and cables to the base.
func pieceOf(t *testing.T, nodes []topologies.Node, links [][4]int, atts ...topologies.Attachment) *topologies.Piece {
	t.Helper()
	pt := topologies.New()
	for _, n := range nodes {
		_, err := pt.AddNode(n)
		require.NoError(t, err)
	}
	for _, l := range links {
		require.NoError(t, pt.Connect(topologies.PortRef{Node: l[0], Port: l[1]}, topologies.PortRef{Node: l[2], Port: l[3]}, 0, 0))
	}
	return &topologies.Piece{Topology: pt, Attachments: atts}
}

func TestCheckPiece(t *testing.T) {
	base := topologies.Thesis8()
	g := topologies.GeneratedGUID
	sw := func(name string, guid uint64) topologies.Node {
		return topologies.Node{Type: topologies.Switch, Name: name, NumPorts: 4, GUID: guid}
	}
	ca := func(name string, guid uint64) topologies.Node {
		return topologies.Node{Type: topologies.CA, Name: name, NumPorts: 1, GUID: guid}
	}
	at := func(node string, port int, baseNode string, basePort int) topologies.Attachment {
		return topologies.Attachment{Node: node, Port: port, BaseNode: baseNode, BasePort: basePort}
	}
	sw16 := []topologies.Node{sw("sw16", g(16))}
	for _, tc := range []struct {
		name  string
		piece *topologies.Piece
		want  string // in the error; "" for a good piece
	}{
		{"thesis piece", topologies.Thesis8AddPiece(), ""},
		{"a host on a free switch port", pieceOf(t, []topologies.Node{ca("ca19", g(19))}, nil, at("ca19", 1, "sw5", 4)), ""},
		{"nil", nil, "no nodes"},
		{"no nodes", &topologies.Piece{Topology: topologies.New()}, "no nodes"},
		{"router", pieceOf(t, []topologies.Node{{Type: topologies.Router, Name: "r", NumPorts: 2, GUID: g(40)}}, nil, at("r", 1, "sw5", 4)),
			"r is a router"},
		{"name taken", pieceOf(t, []topologies.Node{sw("sw8", g(16))}, nil, at("sw8", 1, "sw5", 4)), `node "sw8" is in the fabric already`},
		{"node GUID taken", pieceOf(t, []topologies.Node{sw("sw16", g(8))}, nil, at("sw16", 1, "sw5", 4)), "sw16's GUID 0x02fab00000000800 is sw8's"},
		{"port GUID taken", pieceOf(t, []topologies.Node{{Type: topologies.CA, Name: "ca19", NumPorts: 1, GUID: g(19),
			Ports: []topologies.Port{{}, {GUID: g(4) + 1}}}}, nil, at("ca19", 1, "sw5", 4)), "ca19[1]'s port GUID 0x02fab00000000401 is ca4[1]'s"},
		{"node GUID is a port GUID", pieceOf(t, []topologies.Node{sw("sw16", g(7)+1)}, nil, at("sw16", 1, "sw5", 4)), "is ca7[1]'s port GUID"},
		{"not cabled to the fabric", pieceOf(t, sw16, nil), "no port of it is cabled to the fabric"},
		{"island", pieceOf(t, []topologies.Node{sw("sw16", g(16)), ca("ca19", g(19))}, nil, at("sw16", 1, "sw5", 4)),
			"ca19 would not be connected"},
		{"unknown base node", pieceOf(t, sw16, nil, at("sw16", 1, "sw99", 1)), `sw16[1] names "sw99", which is neither in the piece nor in the fabric`},
		{"base HCA", pieceOf(t, sw16, nil, at("sw16", 1, "ca4", 2)), "port of an HCA"},
		{"base port out of range", pieceOf(t, sw16, nil, at("sw16", 1, "sw8", 5)), "sw8 has ports 1-4"},
		{"base port cabled", pieceOf(t, sw16, nil, at("sw16", 1, "sw8", 1)), "sw8[1], which is cabled to sw3[2] already"},
		{"base port twice", pieceOf(t, sw16, nil, at("sw16", 1, "sw8", 3), at("sw16", 2, "sw8", 3)), "sw16[1] and sw16[2] both name sw8[3]"},
		{"piece port out of range", pieceOf(t, sw16, nil, at("sw16", 5, "sw8", 3)), "sw16[5]: sw16 has ports 1-4"},
		{"piece port cabled twice", pieceOf(t, []topologies.Node{sw("sw16", g(16)), ca("ca17", g(17))}, [][4]int{{0, 1, 1, 1}},
			at("sw16", 1, "sw8", 3)), "sw16[1] is cabled both to ca17[1] of the piece and to sw8[3] of the fabric"},
		{"cable from nowhere", pieceOf(t, sw16, nil, at("sw17", 1, "sw8", 3)), `a cable starts at "sw17"`},
		{"rate other than the switch's", pieceOf(t, sw16, nil, topologies.Attachment{Node: "sw16", Port: 1, BaseNode: "sw8", BasePort: 3,
			Width: topologies.Width4x, Speed: topologies.SpeedQDR}), "sw8 would run sw8[3] at 4x QDR and sw8[1] at 4x SDR"},
		{"an extended speed other than the switch's", pieceOf(t, sw16, nil, topologies.Attachment{Node: "sw16", Port: 1, BaseNode: "sw8", BasePort: 3,
			Width: topologies.Width4x, Speed: topologies.SpeedFDR}), "sw8 would run sw8[3] at 4x FDR and sw8[1] at 4x SDR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := harness.CheckPiece(base, tc.piece)
			if tc.want == "" {
				require.NoError(t, err)
				first := base.NumNodes()
				require.Equal(t, first+tc.piece.Topology.NumNodes(), u.NumNodes())
				for i := range first {
					assert.Equal(t, base.Node(i).Name, u.Node(i).Name, "the fabric's nodes keep their indices")
				}
				for _, a := range tc.piece.Attachments {
					i, _ := u.Lookup(a.Node)
					j, _ := u.Lookup(a.BaseNode)
					peer, ok := u.Peer(topologies.PortRef{Node: i, Port: a.Port})
					assert.True(t, ok && peer == topologies.PortRef{Node: j, Port: a.BasePort}, "cable %+v", a)
				}
				assert.Equal(t, base.NumLinks()+tc.piece.Topology.NumLinks()+len(tc.piece.Attachments), u.NumLinks())
				return
			}
			require.Error(t, err)
			assert.True(t, errors.Is(err, harness.ErrBadPiece), "%v does not wrap ErrBadPiece", err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Nil(t, u)
		})
	}
	assert.Equal(t, 16, base.NumLinks(), "CheckPiece changed the base")
}

// TestAddUsage: the add command's argument errors, before any fabric is
// touched.
func TestAddUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"add"}, harness.ExitUsage, "want a fabric name"},
		{[]string{"add", "x"}, harness.ExitUsage, "missing -f PIECE"},
		{[]string{"add", "Bad-Name", "-f", "p"}, harness.ExitUsage, "fabric name"},
		{[]string{"add", "x", "-f", "/nonexistent/piece.net"}, harness.ExitFailure, "no such file"},
	} {
		code, _, errOut := run(tc.args...)
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, errOut)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
	}
	code, out, _ := run("add", "-h")
	assert.Equal(t, harness.ExitOK, code)
	assert.True(t, strings.HasPrefix(out, "usage: ibfab add N -f PIECE"), out)
	code, out, errOut := run("topo", "thesis8-piece")
	require.Equal(t, harness.ExitOK, code, errOut)
	p, err := topologies.ParsePiece(strings.NewReader(out), "thesis8-piece")
	require.NoError(t, err)
	assert.True(t, p.Topology.Equal(topologies.Thesis8AddPiece().Topology))
	assert.Len(t, p.Attachments, 2)
}
