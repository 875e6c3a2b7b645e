// Package topologies describes InfiniBand fabrics: which switches, channel
// adapters (CAs) and routers exist, and which port of one is cabled to which
// port of another, at what width and speed.
//
// A Topology is built three ways:
//
//   - by hand, with AddNode and Connect;
//   - by Parse, ParseFile or ParseFS from the text format that ibnetdiscover
//     prints and ibsim reads (the "net file"), so a snapshot of a real cluster
//     replays here;
//   - by the generators: Irregular (the thesis's random irregular networks),
//     FatTree, KAryNTree, RLFT (seed 003's real-life fat trees), Mesh, Torus
//     and Thesis8, the thesis's 8-switch example, which is also Default.
//
// LayoutFatTree reads a fat tree's stages, leaf order and host order from
// its cabling. Seed 003's experiments build on it: the static queuing
// schemes (SQS: the SL a source gives a flow), hot-spot sources
// (HotSpotSources) and an all-to-all of pairwise exchanges standing in for
// the PTRANS trace (PairwiseExchange), all pure functions of host indexes.
//
// Write emits the same text format; its output loads unchanged both here and
// in ibsim, with our GUIDs and link rates.
//
// # Ordering
//
// Everything is deterministic: nodes keep the order in which they were added
// (file order for parsed topologies), and Links returns links sorted by their
// lower end. Generators add the CA the subnet manager runs on first, because
// ibsim attaches its SM port to the first node of a file.
//
// # Distances
//
// Distances and diameters count links. A path may pass only through switches:
// CAs and routers are end points, never transit nodes, because a CA does not
// forward packets and a router joins subnets. Diameter is taken over every
// pair of nodes, SwitchDiameter over pairs of switches; where every CA hangs
// off a switch, Diameter is at most SwitchDiameter plus two.
//
// # The net file format
//
// A file is a sequence of node records separated by blank lines. A record is
// a header line, "Switch", "Ca" (or "Hca") or "Rt", the number of ports and
// the quoted node name, optionally followed by a comment holding the node
// description and, for switches, "enhanced port 0" or "base port 0" and the
// port-0 LID and LMC:
//
//	Switch	8 "S-0000000000200000"	# "Switch1" base port 0 lid 1 lmc 0
//
// followed by one line per cabled port: the local port number, for CAs its
// port GUID in parentheses, the peer's quoted name and port number, and a
// comment with the CA port's LID and LMC, the peer's description and LID and
// the active link rate:
//
//	[1]	"H-0000000000100000"[1](100001)	# "Hca1" lid 2 4xSDR
//	[1](100001)	"S-0000000000200000"[1]	# lid 2 lmc 0 "Switch1" lid 1 4xSDR
//
// Lines before a header set properties of the next node, as ibsim reads them:
// switchguid=, caguid= (or hcaguids=) and rtguid= set the GUID counter of that
// node type, sysimgguid= and vendid= apply to the next node, devid= to every
// later node, and width=, speed= and extspeed= set the default enabled link
// width and speeds of later ports. Without a GUID line a node gets the next
// GUID ibsim would give it: switches count up by one from 0x200000, CAs by
// their port count plus one from 0x100000 (a router needs an rtguid= line),
// and a CA's port GUIDs, unless its port lines give them, are its node GUID
// plus the port number.
//
// On port lines, ibsim's options w=, s= and e= set the port's enabled width,
// speed and extended speed masks (PortInfo encodings: w=2 is 4x, w=8 is 12x,
// so w=12 enables 8x and 12x), and the link runs at the highest width and
// speed both ends enable. A comment rate such as "4xQDR" overrides the
// options and enables that rate and the ones ibsim falls back to (4x also
// enables 1x, 12x enables 1x and 4x; a speed enables every slower one).
// ibsim reads comment rates on switch and CA lines only; we read them on
// router lines too, where ibnetdiscover prints the true rate as well.
//
// "include" lines read another file, relative to the including one; "do"
// lines (ibsim console commands) are ignored; ibnetdiscover's grouping lines
// ("Chassis", "Non-Chassis Nodes", "Hostname:") are ignored. Everything after
// a "#" outside quotes is a comment. Any other line is an error, as are
// dangling links, port numbers out of range, links that the peer's record
// does not list back, and duplicate names or GUIDs; every error names the
// file and line.
package topologies
