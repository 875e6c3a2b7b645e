package topologies

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Limits of the model. IBA gives NodeInfo.NumPorts 8 bits and reserves port
// 255, so a node has at most 254 ports; NodeDescription is 64 bytes; ibsim
// keeps node names in 65-byte buffers.
const (
	MaxPorts          = 254
	MaxNameLen        = 64
	MaxDescriptionLen = 64
)

// Errors that parsing, building and generating wrap, so callers can tell
// the kinds apart with errors.Is.
var (
	ErrSyntax        = errors.New("malformed line")
	ErrDanglingLink  = errors.New("dangling link")
	ErrPortRange     = errors.New("port out of range")
	ErrAsymmetric    = errors.New("asymmetric link")
	ErrPortInUse     = errors.New("port already cabled")
	ErrDuplicateName = errors.New("duplicate node name")
	ErrDuplicateGUID = errors.New("duplicate GUID")
	ErrRate          = errors.New("invalid link rate")
	ErrInclude       = errors.New("include failed")
	ErrInvalid       = errors.New("invalid argument")
)

//go:generate go tool stringer -type=NodeType,Permutation,SQS,Width,Speed -linecomment

// NodeType is a node's kind, with the values of NodeInfo.NodeType (IBA 14.2.5.3).
type NodeType uint8

// Node types.
const (
	// CA: channel adapter: an HCA or TCA, an end node
	CA     NodeType = 1 // Ca
	Switch NodeType = 2 // Switch
	Router NodeType = 3 // Rt
)

func (t NodeType) valid() bool { return t == CA || t == Switch || t == Router }

// Port holds what a file records about one port of a node. Links are kept by
// the Topology, not here.
type Port struct {
	// GUID is the port GUID. CA and router ports have their own; of a
	// switch's ports only port 0 has one, equal to the node GUID.
	GUID uint64
	// LID and LMC are annotations copied from a file (an SM assigns the real
	// ones); for a switch they live on port 0.
	LID uint16
	LMC uint8
	// Ext is the external (front panel) port number ibnetdiscover prints for
	// ports inside a chassis, 0 when there is none.
	Ext int
}

// Node is one switch, CA or router.
type Node struct {
	Type NodeType
	// Name is the node's id in a net file, the quoted string, unique in a
	// topology. ibnetdiscover names nodes "S-<guid>", "H-<guid>", "R-<guid>".
	Name string
	// Description is NodeDescription; AddNode sets it to Name when empty,
	// as ibsim does.
	Description string
	NumPorts    int
	// GUID is the node GUID; never 0 in a Topology.
	GUID uint64
	// SystemImageGUID defaults to GUID.
	SystemImageGUID uint64
	VendorID        uint32
	DeviceID        uint32
	// EnhancedPort0 marks a switch whose management port 0 is enhanced.
	EnhancedPort0 bool
	// Ports has NumPorts+1 entries, indexed by port number; Ports[0] is a
	// switch's management port and unused on CAs and routers.
	Ports []Port
}

// PortRef names one port: Node indexes Topology.Nodes, Port is the port number.
type PortRef struct {
	Node int
	Port int
}

// Width is a link width, encoded as PortInfo.LinkWidthActive (IBA 14.2.5.6).
type Width uint8

// Link widths.
const (
	Width1x  Width = 1  // 1x
	Width4x  Width = 2  // 4x
	Width8x  Width = 4  // 8x
	Width12x Width = 8  // 12x
	Width2x  Width = 16 // 2x
)

// DefaultWidth and DefaultSpeed are what a link gets when nothing says
// otherwise, in our model and in ibsim.
const (
	DefaultWidth = Width4x
	DefaultSpeed = SpeedSDR
)

// Lanes returns the number of lanes, 0 for an invalid width.
func (w Width) Lanes() int {
	switch w {
	case Width1x:
		return 1
	case Width2x:
		return 2
	case Width4x:
		return 4
	case Width8x:
		return 8
	case Width12x:
		return 12
	}
	return 0
}

// Speed is a per-lane link speed. Each is one bit, ordered from slowest to
// fastest, so a set of enabled speeds is a mask and the fastest common speed
// is the highest common bit. The bits are those of wire/mad's LinkSpeed
// (SDR, DDR, QDR their PortInfo LinkSpeedActive values, FDR to NDR the
// LinkSpeedExt values shifted by 4, XDR LinkSpeedExt2's by 8), but for
// Mellanox's FDR10 in the bit mad leaves unused.
type Speed uint16

// Link speeds.
const (
	// SpeedSDR: 2.5 Gb/s per lane
	SpeedSDR Speed = 1 << iota // SDR
	// SpeedDDR: 5 Gb/s
	SpeedDDR // DDR
	// SpeedQDR: 10 Gb/s
	SpeedQDR // QDR
	// SpeedFDR10: 10.3125 Gb/s, Mellanox
	SpeedFDR10 // FDR10
	// SpeedFDR: 14.0625 Gb/s
	SpeedFDR // FDR
	// SpeedEDR: 25.78125 Gb/s
	SpeedEDR // EDR
	// SpeedHDR: 53.125 Gb/s
	SpeedHDR // HDR
	// SpeedNDR: 106.25 Gb/s
	SpeedNDR // NDR
	// SpeedXDR: 212.5 Gb/s
	SpeedXDR // XDR
)

func parseSpeed(name string) (Speed, bool) {
	for s := SpeedSDR; s != 0; s <<= 1 {
		if s.String() == name {
			return s, true
		}
	}
	return 0, false
}

func singleBit[T ~uint8 | ~uint16](v T) bool { return v != 0 && v&(v-1) == 0 }

// highestBit returns the highest set bit of m, 0 when m is 0.
func highestBit[T ~uint8 | ~uint16](m T) T {
	var h T
	for b := T(1); b != 0; b <<= 1 {
		if m&b != 0 {
			h = b
		}
	}
	return h
}

// Link is a cable between two ports. A is the end with the lower (node,
// port), so each link has one spelling.
type Link struct {
	A, B  PortRef
	Width Width
	Speed Speed
}

// Topology is a fabric: nodes in a fixed order and the links between their
// ports. The zero value is not usable; call New. The Nodes that Node and
// Nodes return are the topology's own: callers may edit annotations
// (Description, LIDs, vendor and device ids) but must not change a node's
// Type, Name, GUIDs or port count, which the topology indexes. A Topology is
// not safe for concurrent writes.
type Topology struct {
	nodes    []*Node
	links    []Link         // in insertion order; Links sorts a copy
	portLink [][]int        // [node][port] -> index in links, -1 when free
	byName   map[string]int // name -> node index
	byGUID   map[uint64]int // node GUID -> node index
	byPort   map[uint64]PortRef
}

// New returns an empty topology.
func New() *Topology {
	return &Topology{
		byName: map[string]int{},
		byGUID: map[uint64]int{},
		byPort: map[uint64]PortRef{},
	}
}

// validName reports whether ibsim and our writer can carry name: quotes end
// it, and ibsim reserves '#' and '@' for its module prefixes and aliases.
func validName(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Errorf("%w: node name %q must have 1 to %d bytes", ErrInvalid, name, MaxNameLen)
	}
	if i := strings.IndexFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f || r == '"' || r == '#' || r == '@' }); i >= 0 {
		return fmt.Errorf("%w: node name %q contains %q", ErrInvalid, name, name[i])
	}
	return nil
}

func validDescription(desc string) error {
	if len(desc) > MaxDescriptionLen {
		return fmt.Errorf("%w: description %q is longer than %d bytes", ErrInvalid, desc, MaxDescriptionLen)
	}
	if strings.ContainsFunc(desc, func(r rune) bool { return r < ' ' || r == 0x7f || r == '"' }) {
		return fmt.Errorf("%w: description %q contains a quote or control character", ErrInvalid, desc)
	}
	return nil
}

// AddNode adds a copy of n and returns its index. It fills the defaults:
// Description from Name, SystemImageGUID from GUID, a Ports slice when nil,
// a switch's port 0 GUID, and CA and router port GUIDs left 0 as GUID plus
// the port number (ibsim's rule). It fails on an invalid type, name,
// description or port count, a zero GUID, or a name or GUID already in use.
func (t *Topology) AddNode(n Node) (int, error) {
	if err := t.checkNode(&n); err != nil {
		return 0, err
	}
	if err := nodePorts(&n); err != nil {
		return 0, err
	}
	if err := t.checkGUIDs(&n); err != nil {
		return 0, err
	}
	for p := range n.Ports {
		if n.Ports[p].Ext < 0 || n.Ports[p].LMC > 7 {
			return 0, fmt.Errorf("%w: node %q port %d has ext %d, lmc %d", ErrInvalid, n.Name, p, n.Ports[p].Ext, n.Ports[p].LMC)
		}
	}
	return t.insert(&n), nil
}

// checkNode checks n's type, name, port count, description and GUID, and
// that its name is free; it fills the description and system image GUID
// when they are not given.
func (t *Topology) checkNode(n *Node) error {
	if !n.Type.valid() {
		return fmt.Errorf("%w: node %q has type %v", ErrInvalid, n.Name, n.Type)
	}
	if err := validName(n.Name); err != nil {
		return err
	}
	if n.NumPorts < 1 || n.NumPorts > MaxPorts {
		return fmt.Errorf("%w: node %q has %d ports, want 1 to %d", ErrPortRange, n.Name, n.NumPorts, MaxPorts)
	}
	if n.Description == "" {
		n.Description = n.Name
	}
	if err := validDescription(n.Description); err != nil {
		return err
	}
	if n.GUID == 0 {
		return fmt.Errorf("%w: node %q has GUID 0", ErrInvalid, n.Name)
	}
	if n.SystemImageGUID == 0 {
		n.SystemImageGUID = n.GUID
	}
	if _, dup := t.byName[n.Name]; dup {
		return fmt.Errorf("%w: %q", ErrDuplicateName, n.Name)
	}
	return nil
}

// nodePorts gives n a Ports slice of its own, one entry per port and
// port 0, with the port GUIDs: a switch's port 0 has the node GUID and
// the others none; a CA's or router's ports left 0 get GUID plus the
// port number.
func nodePorts(n *Node) error {
	if n.Ports == nil {
		n.Ports = make([]Port, n.NumPorts+1)
	} else if len(n.Ports) != n.NumPorts+1 {
		return fmt.Errorf("%w: node %q has %d ports but %d port entries", ErrInvalid, n.Name, n.NumPorts, len(n.Ports))
	} else {
		n.Ports = slices.Clone(n.Ports)
	}
	if n.Type != Switch {
		n.Ports[0] = Port{}
		for p := 1; p <= n.NumPorts; p++ {
			if n.Ports[p].GUID == 0 {
				n.Ports[p].GUID = n.GUID + uint64(p)
			}
		}
		return nil
	}
	if g := n.Ports[0].GUID; g != 0 && g != n.GUID {
		return fmt.Errorf("%w: switch %q port 0 GUID %#x differs from its node GUID %#x", ErrInvalid, n.Name, g, n.GUID)
	}
	n.Ports[0].GUID = n.GUID
	for p := 1; p <= n.NumPorts; p++ {
		if n.Ports[p].GUID != 0 {
			return fmt.Errorf("%w: switch %q port %d has a GUID; only port 0 has one", ErrInvalid, n.Name, p)
		}
	}
	return nil
}

// insert appends the checked node n, indexes its name and GUIDs, and
// returns its index; none of its ports is cabled.
func (t *Topology) insert(n *Node) int {
	i := len(t.nodes)
	t.nodes = append(t.nodes, n)
	t.byName[n.Name] = i
	t.byGUID[n.GUID] = i
	for p, port := range n.Ports {
		if port.GUID != 0 {
			t.byPort[port.GUID] = PortRef{i, p}
		}
	}
	free := make([]int, n.NumPorts+1)
	for p := range free {
		free[p] = -1
	}
	t.portLink = append(t.portLink, free)
	return i
}

// checkGUIDs rejects a node whose node GUID or port GUIDs are already used by
// another node, or repeat among its own ports. A node's own GUID may equal one
// of its port GUIDs (a switch's always equals port 0's).
func (t *Topology) checkGUIDs(n *Node) error {
	if j, ok := t.byGUID[n.GUID]; ok {
		return fmt.Errorf("%w: node %q GUID %#x is also node %q's", ErrDuplicateGUID, n.Name, n.GUID, t.nodes[j].Name)
	}
	if ref, ok := t.byPort[n.GUID]; ok {
		return fmt.Errorf("%w: node %q GUID %#x is also port %d of %q", ErrDuplicateGUID, n.Name, n.GUID, ref.Port, t.nodes[ref.Node].Name)
	}
	seen := map[uint64]int{}
	for p, port := range n.Ports {
		if port.GUID == 0 {
			continue
		}
		if q, ok := seen[port.GUID]; ok {
			return fmt.Errorf("%w: node %q ports %d and %d share GUID %#x", ErrDuplicateGUID, n.Name, q, p, port.GUID)
		}
		seen[port.GUID] = p
		if j, ok := t.byGUID[port.GUID]; ok {
			return fmt.Errorf("%w: node %q port %d GUID %#x is also node %q's", ErrDuplicateGUID, n.Name, p, port.GUID, t.nodes[j].Name)
		}
		if ref, ok := t.byPort[port.GUID]; ok {
			return fmt.Errorf("%w: node %q port %d GUID %#x is also port %d of %q", ErrDuplicateGUID, n.Name, p, port.GUID, ref.Port, t.nodes[ref.Node].Name)
		}
	}
	return nil
}

// portName returns `"name"[port]` for error messages.
func (t *Topology) portName(p PortRef) string {
	if p.Node < 0 || p.Node >= len(t.nodes) {
		return fmt.Sprintf("node#%d[%d]", p.Node, p.Port)
	}
	return fmt.Sprintf("%q[%d]", t.nodes[p.Node].Name, p.Port)
}

// checkPort reports whether p names an existing external port (1..NumPorts).
func (t *Topology) checkPort(p PortRef) error {
	if p.Node < 0 || p.Node >= len(t.nodes) {
		return fmt.Errorf("%w: no node %d", ErrInvalid, p.Node)
	}
	if n := t.nodes[p.Node]; p.Port < 1 || p.Port > n.NumPorts {
		return fmt.Errorf("%w: %s: %q has ports 1 to %d", ErrPortRange, t.portName(p), n.Name, n.NumPorts)
	}
	return nil
}

// Connect cables port a to port b. A zero width or speed means the default,
// 4x SDR. Both ports must exist and be free and differ; a node may be cabled
// to itself on two ports, and two nodes may share several links.
func (t *Topology) Connect(a, b PortRef, w Width, s Speed) error {
	if err := t.checkPort(a); err != nil {
		return err
	}
	if err := t.checkPort(b); err != nil {
		return err
	}
	if a == b {
		return fmt.Errorf("%w: %s is cabled to itself", ErrInvalid, t.portName(a))
	}
	if w == 0 {
		w = DefaultWidth
	}
	if s == 0 {
		s = DefaultSpeed
	}
	if w.Lanes() == 0 {
		return fmt.Errorf("%w: width %v", ErrRate, w)
	}
	if !singleBit(s) {
		return fmt.Errorf("%w: speed %v", ErrRate, s)
	}
	for _, p := range []PortRef{a, b} {
		if l := t.portLink[p.Node][p.Port]; l >= 0 {
			return fmt.Errorf("%w: %s is already cabled to %s", ErrPortInUse, t.portName(p), t.portName(t.other(l, p)))
		}
	}
	if b.Node < a.Node || (b.Node == a.Node && b.Port < a.Port) {
		a, b = b, a
	}
	t.links = append(t.links, Link{A: a, B: b, Width: w, Speed: s})
	t.portLink[a.Node][a.Port] = len(t.links) - 1
	t.portLink[b.Node][b.Port] = len(t.links) - 1
	return nil
}

func (t *Topology) other(l int, p PortRef) PortRef {
	if t.links[l].A == p {
		return t.links[l].B
	}
	return t.links[l].A
}

// SetLinkRate changes the width and speed of the link at port p.
func (t *Topology) SetLinkRate(p PortRef, w Width, s Speed) error {
	if err := t.checkPort(p); err != nil {
		return err
	}
	l := t.portLink[p.Node][p.Port]
	if l < 0 {
		return fmt.Errorf("%w: %s is not cabled", ErrInvalid, t.portName(p))
	}
	if w.Lanes() == 0 {
		return fmt.Errorf("%w: width %v", ErrRate, w)
	}
	if !singleBit(s) {
		return fmt.Errorf("%w: speed %v", ErrRate, s)
	}
	t.links[l].Width, t.links[l].Speed = w, s
	return nil
}

// NumNodes returns the number of nodes.
func (t *Topology) NumNodes() int { return len(t.nodes) }

// Node returns node i, which must be in range.
func (t *Topology) Node(i int) *Node { return t.nodes[i] }

// Nodes returns the nodes in order.
func (t *Topology) Nodes() []*Node { return slices.Clone(t.nodes) }

// Lookup returns the index of the node called name.
func (t *Topology) Lookup(name string) (int, bool) {
	i, ok := t.byName[name]
	return i, ok
}

// LookupGUID returns the index of the node with node GUID guid.
func (t *Topology) LookupGUID(guid uint64) (int, bool) {
	i, ok := t.byGUID[guid]
	return i, ok
}

// LookupPortGUID returns the port with port GUID guid (a switch's is port 0).
func (t *Topology) LookupPortGUID(guid uint64) (PortRef, bool) {
	p, ok := t.byPort[guid]
	return p, ok
}

// Links returns every link, sorted by A then B.
func (t *Topology) Links() []Link {
	ls := slices.Clone(t.links)
	slices.SortFunc(ls, func(x, y Link) int {
		if c := comparePort(x.A, y.A); c != 0 {
			return c
		}
		return comparePort(x.B, y.B)
	})
	return ls
}

func comparePort(a, b PortRef) int {
	if a.Node != b.Node {
		return a.Node - b.Node
	}
	return a.Port - b.Port
}

// NumLinks returns the number of links.
func (t *Topology) NumLinks() int { return len(t.links) }

// LinkAt returns the link cabled to port p.
func (t *Topology) LinkAt(p PortRef) (Link, bool) {
	if t.checkPort(p) != nil {
		return Link{}, false
	}
	l := t.portLink[p.Node][p.Port]
	if l < 0 {
		return Link{}, false
	}
	return t.links[l], true
}

// Peer returns the port at the other end of the link at p.
func (t *Topology) Peer(p PortRef) (PortRef, bool) {
	if t.checkPort(p) != nil {
		return PortRef{}, false
	}
	l := t.portLink[p.Node][p.Port]
	if l < 0 {
		return PortRef{}, false
	}
	return t.other(l, p), true
}

// Count returns the number of nodes of type typ.
func (t *Topology) Count(typ NodeType) int {
	n := 0
	for _, nd := range t.nodes {
		if nd.Type == typ {
			n++
		}
	}
	return n
}

// Equal reports whether u has the same nodes, in the same order, and the
// same links as t.
func (t *Topology) Equal(u *Topology) bool {
	if len(t.nodes) != len(u.nodes) || len(t.links) != len(u.links) {
		return false
	}
	for i, n := range t.nodes {
		m := u.nodes[i]
		if n.Type != m.Type || n.Name != m.Name || n.Description != m.Description ||
			n.NumPorts != m.NumPorts || n.GUID != m.GUID || n.SystemImageGUID != m.SystemImageGUID ||
			n.VendorID != m.VendorID || n.DeviceID != m.DeviceID || n.EnhancedPort0 != m.EnhancedPort0 ||
			!slices.Equal(n.Ports, m.Ports) {
			return false
		}
	}
	return slices.Equal(t.Links(), u.Links())
}

// Clone returns a deep copy of t.
func (t *Topology) Clone() *Topology {
	u := &Topology{
		nodes:    make([]*Node, len(t.nodes)),
		links:    slices.Clone(t.links),
		portLink: make([][]int, len(t.portLink)),
		byName:   maps.Clone(t.byName),
		byGUID:   maps.Clone(t.byGUID),
		byPort:   maps.Clone(t.byPort),
	}
	for i, n := range t.nodes {
		c := *n
		c.Ports = slices.Clone(n.Ports)
		u.nodes[i] = &c
		u.portLink[i] = slices.Clone(t.portLink[i])
	}
	return u
}
