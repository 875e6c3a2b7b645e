package topologies

import (
	"fmt"
	"strconv"
)

// thesisLink is one cable of the thesis network, by thesis node number.
type thesisLink struct{ a, pa, b, pb int }

// The thesis's example network (Figs. 67, 76 and 92): switches numbered 1,
// 2, 3, 5, 6, 8, 9, 10 with four ports, single-port CAs 4, 7, 11..15. The
// numbers are the thesis's LIDs; the subnet manager runs on CA 4.
var (
	thesis8Switches = []int{1, 2, 3, 5, 6, 8, 9, 10}
	thesis8CAs      = []int{4, 7, 11, 12, 13, 14, 15}
	thesis8Links    = []thesisLink{
		{1, 1, 2, 1}, {1, 2, 3, 1}, {1, 3, 4, 1},
		{2, 2, 5, 2}, {2, 3, 6, 1}, {2, 4, 7, 1},
		{3, 2, 8, 1}, {3, 3, 9, 1}, {3, 4, 6, 2},
		{5, 1, 10, 1}, {5, 3, 11, 1},
		{6, 3, 10, 2}, {6, 4, 12, 1},
		{8, 2, 13, 1},
		{9, 2, 14, 1},
		{10, 3, 15, 1},
	}
)

// Thesis8 returns the thesis's 8-switch, 7-CA example network, as
// reconstructed from its routing tables: switches "sw1", "sw2", "sw3",
// "sw5", "sw6", "sw8", "sw9", "sw10" with 4 ports, CAs "ca4", "ca7",
// "ca11".."ca15" with one, named and GUID-numbered (GeneratedGUID) by the
// thesis's LIDs. Node 0 is ca4, the subnet manager's CA on port 3 of sw1;
// then come the switches and the other CAs. Ports 3 of sw8 and sw9 are
// free for Thesis8AddPiece.
//
//	port:  1     2     3     4
//	sw1    sw2   sw3   ca4   -
//	sw2    sw1   sw5   sw6   ca7
//	sw3    sw1   sw8   sw9   sw6
//	sw5    sw10  sw2   ca11  -
//	sw6    sw2   sw3   sw10  ca12
//	sw8    sw3   ca13  -     -
//	sw9    sw3   ca14  -     -
//	sw10   sw5   sw6   ca15  -
func Thesis8() *Topology {
	b := newBuilder()
	idx := map[int]int{}
	idx[4] = b.nodeGUID(CA, "ca4", 1, GeneratedGUID(4))
	for _, s := range thesis8Switches {
		idx[s] = b.nodeGUID(Switch, "sw"+strconv.Itoa(s), 4, GeneratedGUID(s))
	}
	for _, c := range thesis8CAs[1:] {
		idx[c] = b.nodeGUID(CA, "ca"+strconv.Itoa(c), 1, GeneratedGUID(c))
	}
	for _, l := range thesis8Links {
		b.link(idx[l.a], l.pa, idx[l.b], l.pb)
	}
	return mustBuild(b)
}

// Thesis8AddPiece returns the addition of the thesis's Fig. 68: switch
// "sw16" (4 ports) with CA "ca17" on port 1 and CA "ca18" on port 3, its
// port 2 cabled to port 3 of sw8 and its port 4 to port 3 of sw9. Apply it
// with Thesis8().Extend.
func Thesis8AddPiece() *Piece {
	b := newBuilder()
	sw := b.nodeGUID(Switch, "sw16", 4, GeneratedGUID(16))
	c17 := b.nodeGUID(CA, "ca17", 1, GeneratedGUID(17))
	c18 := b.nodeGUID(CA, "ca18", 1, GeneratedGUID(18))
	b.link(sw, 1, c17, 1)
	b.link(sw, 3, c18, 1)
	return &Piece{
		Topology: mustBuild(b),
		Attachments: []Attachment{
			{Node: "sw16", Port: 2, BaseNode: "sw8", BasePort: 3},
			{Node: "sw16", Port: 4, BaseNode: "sw9", BasePort: 3},
		},
	}
}

// Default returns the built-in default fabric, Thesis8.
func Default() *Topology { return Thesis8() }

// mustBuild is for fixed networks, which cannot fail to build.
func mustBuild(b *builder) *Topology {
	t, err := b.done()
	if err != nil {
		panic(fmt.Sprintf("topologies: building a fixed network: %v", err))
	}
	return t
}
