package clab

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"ibfab/internal/enum"
	"ibfab/link/veth"
	"ibfab/topologies"
)

//go:generate go tool stringer -type=LinkType -linecomment

// LinkType is how a link between hosts reaches its nodes, as containerlab
// names the kinds of VXLAN link.
type LinkType uint8

// Link types.
const (
	// VXLANStitch is a veth into the node stitched (tc) to a VXLAN device
	// in the host's namespace: the node sees a veth.
	VXLANStitch LinkType = iota + 1 // vxlan-stitch
	// VXLAN is a VXLAN device moved into the node's namespace.
	VXLAN // vxlan
)

var linkTypes = enum.New("link type", VXLANStitch, VXLAN)

// MarshalText implements encoding.TextMarshaler.
func (l LinkType) MarshalText() ([]byte, error) { return linkTypes.Marshal(l) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (l *LinkType) UnmarshalText(b []byte) error { return linkTypes.Unmarshal(l, b) }

// Defaults of an export.
const (
	DefaultImage       = "ibfab-node:latest"
	DefaultVNIBase     = 1000
	DefaultDstPort     = 4789 // IANA's VXLAN port
	DefaultUnderlayMTU = 9000
	DefaultVethMTU     = 9000 // what ibfab up gives its veths
	// TopologyFile is the fabric's topology file beside the exported
	// files, and TopologyInNode where a node's container sees it.
	TopologyFile   = "topology.net"
	TopologyInNode = "/ibfab/topology.net"
	// PortPrefix names a node's ports as containerlab names a linux
	// node's interfaces: port N is ethN (eth0 is its management).
	PortPrefix = "eth"
	// PortWait is how long a node waits for its interfaces: containerlab
	// starts a container before it wires its links.
	PortWait = "10m"
	maxVNI   = 1<<24 - 1
)

// Host is one machine of a lab: the name of its topology file and its
// address on the underlay, which the other hosts' VXLAN links point at.
type Host struct {
	Name string
	Addr netip.Addr
}

var namePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]*$`)

// ParseHosts parses a comma-separated list of hosts, each ADDR or
// NAME=ADDR (NAME defaults to h1, h2, … by position).
func ParseHosts(s string) ([]Host, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("no hosts: want ADDR or NAME=ADDR, comma-separated")
	}
	var hosts []Host
	names := map[string]bool{}
	addrs := map[netip.Addr]bool{}
	for i, f := range strings.Split(s, ",") {
		name, addr, ok := strings.Cut(strings.TrimSpace(f), "=")
		if !ok {
			name, addr = "h"+strconv.Itoa(i+1), name
		}
		a, err := netip.ParseAddr(addr)
		if err != nil {
			return nil, fmt.Errorf("host %d: %q is not an IP address", i+1, addr)
		}
		if !namePattern.MatchString(name) {
			return nil, fmt.Errorf("host %d: name %q: want letters, digits, '.', '_' or '-', not first", i+1, name)
		}
		if names[name] || addrs[a] {
			return nil, fmt.Errorf("host %d: %s=%s named or addressed twice", i+1, name, a)
		}
		names[name], addrs[a] = true, true
		hosts = append(hosts, Host{Name: name, Addr: a.Unmap()})
	}
	return hosts, nil
}

// Options are what an export writes besides the topology and placement.
type Options struct {
	Lab         string   // lab name, the same in every host's file; the fabric's name for the nodes
	Image       string   // the node image
	Type        LinkType // how links between hosts reach their nodes
	VNIBase     int      // a link between hosts gets VNIBase + its index in the topology's links
	DstPort     int      // UDP port of every VXLAN link
	UnderlayMTU int      // MTU of the hosts' underlay
	MTU         int      // the fabric's IBA MTU (the nodes' --mtu), 0 for theirs (4096)
	Liveness    string   // the nodes' --liveness, "" for theirs
	Keepalive   string   // the nodes' --keepalive, "" for theirs
	NodeArgs    []string // more arguments for every node
}

// File is one exported file.
type File struct {
	Name string // relative to the export's directory
	Data []byte
}

// Export writes the files of a lab: each host's containerlab topology
// (<host>.clab.yml) and the fabric's topology, which every node reads.
// host gives each node's host by node index (Place, ReadPlacement).
func Export(t *topologies.Topology, hosts []Host, host []int, o Options) ([]File, error) {
	if err := o.check(t, hosts, host); err != nil {
		return nil, err
	}
	links := t.Links()
	files := make([]clabFile, len(hosts))
	for h := range hosts {
		files[h] = clabFile{Name: o.Lab, Topology: clabTopology{Nodes: map[string]clabNode{}}}
	}
	for i, n := range t.Nodes() {
		files[host[i]].Topology.Nodes[n.Name] = o.node(n)
	}
	ipMTU := o.UnderlayMTU
	for i, l := range links {
		a, b := host[l.A.Node], host[l.B.Node]
		ea := clabEndpoint{Node: t.Node(l.A.Node).Name, Interface: PortPrefix + strconv.Itoa(l.A.Port)}
		eb := clabEndpoint{Node: t.Node(l.B.Node).Name, Interface: PortPrefix + strconv.Itoa(l.B.Port)}
		if a == b {
			files[a].Topology.Links = append(files[a].Topology.Links, clabLink{Type: "veth", Endpoints: []clabEndpoint{ea, eb}, MTU: DefaultVethMTU})
			continue
		}
		vni := o.VNIBase + i
		mtu := ipMTU - veth.VXLANOverhead(hosts[b].Addr.Is6())
		files[a].Topology.Links = append(files[a].Topology.Links, o.vxlan(ea, hosts[b].Addr, vni, mtu))
		mtu = ipMTU - veth.VXLANOverhead(hosts[a].Addr.Is6())
		files[b].Topology.Links = append(files[b].Topology.Links, o.vxlan(eb, hosts[a].Addr, vni, mtu))
	}
	var out []File
	for h, f := range files {
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(f); err != nil {
			return nil, err
		}
		if err := enc.Close(); err != nil {
			return nil, err
		}
		out = append(out, File{Name: hosts[h].Name + ".clab.yml", Data: b.Bytes()})
	}
	var sb strings.Builder
	if err := topologies.Write(&sb, t); err != nil {
		return nil, err
	}
	return append(out, File{Name: TopologyFile, Data: []byte(sb.String())}), nil
}

func (o *Options) check(t *topologies.Topology, hosts []Host, host []int) error {
	if !namePattern.MatchString(o.Lab) {
		return fmt.Errorf("lab name %q: want letters, digits, '.', '_' or '-', not first", o.Lab)
	}
	if err := linkTypes.Check(o.Type); err != nil {
		return err
	}
	if len(host) != t.NumNodes() {
		return fmt.Errorf("placement of %d nodes for a fabric of %d", len(host), t.NumNodes())
	}
	for i, h := range host {
		if h < 0 || h >= len(hosts) {
			return fmt.Errorf("node %s placed on host %d of %d", t.Node(i).Name, h, len(hosts))
		}
	}
	for _, n := range t.Nodes() {
		if !namePattern.MatchString(n.Name) {
			return fmt.Errorf("node name %q cannot name a containerlab node (letters, digits, '.', '_' or '-', not first)", n.Name)
		}
		if n.Type == topologies.Router {
			return fmt.Errorf("node %s is a router; ibfab emulates switches and CAs", n.Name)
		}
	}
	if last := o.VNIBase + t.NumLinks() - 1; o.VNIBase < 1 || last > maxVNI {
		return fmt.Errorf("VNIs %d…%d: want 1…%d", o.VNIBase, last, maxVNI)
	}
	if o.DstPort < 1 || o.DstPort > 65535 {
		return fmt.Errorf("UDP port %d: want 1…65535", o.DstPort)
	}
	mtu := o.MTU
	if mtu == 0 {
		mtu = 4096
	}
	frame := veth.FrameSize(mtu)
	for _, h := range hosts {
		if carried := o.UnderlayMTU - veth.VXLANOverhead(h.Addr.Is6()) + 14; carried < frame {
			return fmt.Errorf("an IBA packet of MTU %d is a %d-byte frame; VXLAN over an underlay of MTU %d to %s carries %d: give a smaller MTU (--mtu 1024 fits 1500) or a larger underlay MTU",
				mtu, frame, o.UnderlayMTU, h.Addr, carried)
		}
	}
	return nil
}

// node returns a node's entry: the image, the process and its arguments,
// the fabric's topology bound into the container.
func (o *Options) node(n *topologies.Node) clabNode {
	bin := "/bin/ibhca"
	if n.Type == topologies.Switch {
		bin = "/bin/ibswitch"
	}
	args := []string{bin, "--fabric", o.Lab, "--node", n.Name, "--topology", TopologyInNode,
		"--port-names", PortPrefix, "--port-wait", PortWait}
	if o.MTU != 0 {
		args = append(args, "--mtu", strconv.Itoa(o.MTU))
	}
	if o.Liveness != "" {
		args = append(args, "--liveness", o.Liveness)
	}
	if o.Keepalive != "" {
		args = append(args, "--keepalive", o.Keepalive)
	}
	args = append(args, o.NodeArgs...)
	return clabNode{
		Kind:   "linux",
		Image:  o.Image,
		Cmd:    strings.Join(args, " "),
		Binds:  []string{TopologyFile + ":" + filepath.Dir(TopologyInNode) + "/" + TopologyFile + ":ro"},
		Labels: map[string]string{"ibfab.kind": strings.ToLower(n.Type.String())},
	}
}

func (o *Options) vxlan(e clabEndpoint, remote netip.Addr, vni, mtu int) clabLink {
	return clabLink{Type: o.Type.String(), Endpoint: &e, Remote: remote.String(), VNI: vni, DstPort: o.DstPort, MTU: mtu}
}

// The parts of containerlab's topology file an export writes.
type (
	clabFile struct {
		Name     string       `yaml:"name"`
		Topology clabTopology `yaml:"topology"`
	}
	clabTopology struct {
		Nodes map[string]clabNode `yaml:"nodes"`
		Links []clabLink          `yaml:"links,omitempty"`
	}
	clabNode struct {
		Kind   string            `yaml:"kind"`
		Image  string            `yaml:"image"`
		Cmd    string            `yaml:"cmd"`
		Binds  []string          `yaml:"binds,omitempty"`
		Labels map[string]string `yaml:"labels,omitempty"`
	}
	clabEndpoint struct {
		Node      string `yaml:"node"`
		Interface string `yaml:"interface"`
	}
	clabLink struct {
		Type      string         `yaml:"type"`
		Endpoints []clabEndpoint `yaml:"endpoints,omitempty"`
		Endpoint  *clabEndpoint  `yaml:"endpoint,omitempty"`
		Remote    string         `yaml:"remote,omitempty"`
		VNI       int            `yaml:"vni,omitempty"`
		DstPort   int            `yaml:"dst-port,omitempty"`
		MTU       int            `yaml:"mtu,omitempty"`
	}
)
