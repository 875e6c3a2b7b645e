package topologies

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// ParsePiece reads a piece from a net file: the records of the new nodes,
// whose port lines may also name nodes the file does not define. Those
// lines are the piece's Attachments, cables to ports of the base fabric the
// piece is added to, at the highest width and speed the line enables; the
// base side's records are not in the file. Links between the piece's own
// nodes must be listed by both ends, as in any net file. Include lines are
// an error, as in Parse.
func ParsePiece(r io.Reader, name string) (*Piece, error) {
	return newParser(nil, nil).piece(r, name)
}

// ParsePieceFile is ParsePiece for the named file, resolving include lines
// as ParseFile does.
func ParsePieceFile(filename string) (*Piece, error) {
	open := func(name string) (io.ReadCloser, error) { return os.Open(name) }
	resolve := func(from, inc string) (string, error) {
		if filepath.IsAbs(inc) {
			return filepath.Clean(inc), nil
		}
		return filepath.Join(filepath.Dir(from), inc), nil
	}
	f, err := os.Open(filename)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return newParser(open, resolve).piece(f, filepath.Clean(filename))
}

func (p *parser) piece(r io.Reader, name string) (*Piece, error) {
	if err := p.file(r, name); err != nil {
		return nil, err
	}
	var own, ext []portLine
	for _, pl := range p.pending {
		if _, ok := p.t.Lookup(pl.peer); ok {
			own = append(own, pl)
		} else {
			ext = append(ext, pl)
		}
	}
	// In port order, as WritePiece writes them.
	slices.SortFunc(ext, func(a, b portLine) int { return comparePort(a.local, b.local) })
	var atts []Attachment
	base := map[string]portLine{} // "node[port]" of the base -> its first line
	for _, pl := range ext {
		fail := func(err error) (*Piece, error) { return nil, &ParseError{File: pl.file, Line: pl.line, Err: err} }
		me := p.t.portName(pl.local)
		if err := validName(pl.peer); err != nil {
			return fail(fmt.Errorf("%s names a base node: %w", me, err))
		}
		key := fmt.Sprintf("%q[%d]", pl.peer, pl.peerPort)
		if first, dup := base[key]; dup {
			return fail(fmt.Errorf("%w: %s and %s both name %s", ErrPortInUse, p.t.portName(first.local), me, key))
		}
		base[key] = pl
		w, s := highestBit(pl.width), highestBit(pl.speed)
		if w == 0 || s == 0 {
			return fail(fmt.Errorf("%w: %s enables no width or speed", ErrRate, me))
		}
		atts = append(atts, Attachment{Node: p.t.nodes[pl.local.Node].Name, Port: pl.local.Port,
			BaseNode: pl.peer, BasePort: pl.peerPort, Width: w, Speed: s})
	}
	p.pending = own
	if err := p.cable(); err != nil {
		return nil, err
	}
	if p.t.NumNodes() == 0 {
		return nil, &ParseError{File: name, Line: 1, Err: fmt.Errorf("%w: the piece has no nodes", ErrSyntax)}
	}
	return &Piece{Topology: p.t, Attachments: atts}, nil
}

// WritePiece writes p in the format ParsePiece reads: its nodes as Write
// writes them, each attachment as one more port line of its node naming
// the base fabric's node and port.
func WritePiece(w io.Writer, p *Piece) error {
	t := p.Topology
	at := map[PortRef]Attachment{}
	for _, a := range p.Attachments {
		i, ok := t.Lookup(a.Node)
		if !ok {
			return fmt.Errorf("%w: attachment names %q, not in the piece", ErrDanglingLink, a.Node)
		}
		ref := PortRef{i, a.Port}
		if err := t.checkPort(ref); err != nil {
			return err
		}
		if _, dup := at[ref]; dup {
			return fmt.Errorf("%w: %s has two attachments", ErrPortInUse, t.portName(ref))
		}
		at[ref] = a
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# ibfab piece: %d switches, %d CAs, %d links, %d cables to the base fabric\n",
		t.Count(Switch), t.Count(CA), t.NumLinks(), len(p.Attachments))
	fmt.Fprintf(bw, "# ibnetdiscover format; port lines naming nodes not defined here cable into the running fabric.\n")
	for i := range t.nodes {
		writeNodeWith(bw, t, i, func(port int) (peer *Node, peerPort int, l Link, ok bool) {
			a, ok := at[PortRef{i, port}]
			if !ok {
				return nil, 0, Link{}, false
			}
			// What the piece knows of the base node: its name.
			peer = &Node{Type: Switch, Name: a.BaseNode, Description: a.BaseNode,
				NumPorts: a.BasePort, Ports: make([]Port, a.BasePort+1)}
			l = Link{Width: a.Width, Speed: a.Speed}
			if l.Width == 0 {
				l.Width = DefaultWidth
			}
			if l.Speed == 0 {
				l.Speed = DefaultSpeed
			}
			return peer, a.BasePort, l, true
		})
	}
	return bw.Flush()
}
