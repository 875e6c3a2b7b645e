package topologies

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// maxLineLen bounds one line of a net file; ibnetdiscover's lines are a
// few hundred bytes at most.
const maxLineLen = 64 << 10

// maxIncludeDepth is how deep includes nest; ibsim allows nine files open.
const maxIncludeDepth = 8

// Default GUID counters, per node type, of ibsim when a file has no GUID
// lines. ibsim's router counter starts at 0, which is not a valid GUID, so a
// router needs an rtguid= line.
var defaultGUIDBase = map[NodeType]uint64{CA: 0x100000, Switch: 0x200000, Router: 0}

// ParseError is an error at one line of a net file.
type ParseError struct {
	File string
	Line int
	Err  error
}

// Error returns "file:line: message".
func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }

// Unwrap returns the underlying error, one of the package's Err values.
func (e *ParseError) Unwrap() error { return e.Err }

// Parse reads a net file from r; name is used in error messages. Include
// lines are an error because there is nothing to resolve them against: use
// ParseFile or ParseFS for files that include others.
func Parse(r io.Reader, name string) (*Topology, error) {
	p := newParser(nil, nil)
	return p.run(r, name)
}

// ParseFile reads the net file at filename, resolving include lines relative
// to the directory of the file that holds them.
func ParseFile(filename string) (*Topology, error) {
	open := func(name string) (io.ReadCloser, error) { return os.Open(name) }
	resolve := func(from, inc string) (string, error) {
		if filepath.IsAbs(inc) {
			return filepath.Clean(inc), nil
		}
		return filepath.Join(filepath.Dir(from), inc), nil
	}
	p := newParser(open, resolve)
	f, err := os.Open(filename)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return p.run(f, filepath.Clean(filename))
}

// ParseFS reads the net file name from fsys, resolving include lines in
// fsys relative to the directory of the file that holds them.
func ParseFS(fsys fs.FS, name string) (*Topology, error) {
	open := func(name string) (io.ReadCloser, error) { return fsys.Open(name) }
	resolve := func(from, inc string) (string, error) {
		p := path.Join(path.Dir(from), inc)
		if path.IsAbs(inc) || !fs.ValidPath(p) {
			return "", fmt.Errorf("%q is outside the file system", inc)
		}
		return p, nil
	}
	p := newParser(open, resolve)
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return p.run(f, name)
}

// parser holds ibsim's parse state, which is global across included files.
type parser struct {
	open    func(name string) (io.ReadCloser, error)
	resolve func(from, inc string) (string, error)
	files   []string // include chain, outermost first

	t       *Topology
	rec     *record
	pending []portLine // port lines of finished records, cabled at the end

	guidBase map[NodeType]uint64 // absolute base set by a GUID line
	nextGUID map[NodeType]uint64
	sysImage uint64
	vendor   uint32
	device   uint32
	width    Width // default enabled width mask of new ports
	speed    Speed // default enabled speed mask of new ports
}

// record is a node being read: its header and port lines so far.
type record struct {
	file  string
	line  int
	node  Node
	ports []portLine
}

// portLine is one cabled port as a file states it.
type portLine struct {
	file     string
	line     int
	local    PortRef // Node is set when the record ends
	peer     string
	peerPort int
	width    Width // enabled masks
	speed    Speed
}

func newParser(open func(string) (io.ReadCloser, error), resolve func(string, string) (string, error)) *parser {
	return &parser{
		open:     open,
		resolve:  resolve,
		t:        New(),
		guidBase: maps.Clone(defaultGUIDBase),
		nextGUID: maps.Clone(defaultGUIDBase),
		width:    DefaultWidth,
		speed:    DefaultSpeed,
	}
}

func (p *parser) run(r io.Reader, name string) (*Topology, error) {
	if err := p.file(r, name); err != nil {
		return nil, err
	}
	if err := p.cable(); err != nil {
		return nil, err
	}
	return p.t, nil
}

// file parses one file, recursing into its includes.
func (p *parser) file(r io.Reader, name string) error {
	p.files = append(p.files, name)
	defer func() { p.files = p.files[:len(p.files)-1] }()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLineLen)
	no := 0
	for sc.Scan() {
		no++
		if err := p.line(name, no, sc.Text()); err != nil {
			var pe *ParseError
			if errors.As(err, &pe) {
				return err
			}
			return &ParseError{File: name, Line: no, Err: err}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("%w: line longer than %d bytes", ErrSyntax, maxLineLen)
		}
		return &ParseError{File: name, Line: no + 1, Err: err}
	}
	return p.endRecord()
}

// line handles one line. Errors without a position get this line's.
func (p *parser) line(file string, no int, raw string) error {
	s := strings.TrimSpace(raw)
	switch {
	case s == "":
		return p.endRecord()
	case s[0] == '#':
		return nil // a comment, also inside a record
	case s[0] == '[':
		if p.rec == nil {
			return fmt.Errorf("%w: port line outside a node record", ErrSyntax)
		}
		return p.portLine(file, no, s)
	case s[0] == '@':
		return fmt.Errorf("%w: ibsim port aliases are not supported", ErrSyntax)
	}
	if err := p.endRecord(); err != nil {
		return err
	}
	return p.keywordLine(file, no, s)
}

// headerTypes are the keywords of a node record's header, guidTypes those
// of a GUID counter, by the node type they are of.
var (
	headerTypes = map[string]NodeType{"Switch": Switch, "Ca": CA, "Hca": CA, "Rt": Router}
	guidTypes   = map[string]NodeType{"switchguid": Switch, "caguid": CA, "hcaguids": CA, "rtguid": Router}
)

// keywordLine handles a line outside a record: a node header, a GUID
// counter, a default (assign), an include, or a line ibsim or
// ibnetdiscover write that says nothing here.
func (p *parser) keywordLine(file string, no int, s string) error {
	kw := keyword(s)
	rest := s[len(kw):]
	if typ, ok := headerTypes[kw]; ok {
		return p.header(file, no, typ, rest)
	}
	if typ, ok := guidTypes[kw]; ok {
		return p.guidLine(typ, rest)
	}
	if ok, err := p.assign(kw, rest); ok {
		return err
	}
	switch kw {
	case "module":
		return fmt.Errorf("%w: ibsim module prefixes are not supported", ErrSyntax)
	case "include":
		return p.include(file, rest)
	case "do", "Chassis", "Non-Chassis", "Hostname:":
		// ibsim console commands and ibnetdiscover's grouping lines say
		// nothing about nodes or links.
		return nil
	}
	return fmt.Errorf("%w: unrecognised line %q", ErrSyntax, clip(s))
}

// assign handles the assignments that set what the following records
// default to (system image GUID, vendor and device IDs, enabled widths
// and speeds) and ibsim's pdebug; ok is false for other keywords.
func (p *parser) assign(kw, rest string) (ok bool, err error) {
	switch kw {
	case "sysimgguid":
		v, err := assignment(rest, 64)
		p.sysImage = v
		return true, err
	case "vendid":
		v, err := assignment(rest, 32)
		p.vendor = uint32(v)
		return true, err
	case "devid":
		v, err := assignment(rest, 32)
		p.device = uint32(v)
		return true, err
	case "width":
		v, err := assignment(rest, 8)
		if err == nil && (v < 1 || v > 31) {
			err = fmt.Errorf("%w: width mask %d, want 1 to 31", ErrRate, v)
		}
		p.width = Width(v)
		return true, err
	case "speed":
		v, err := assignment(rest, 8)
		if err == nil && (v < 1 || v > 7) {
			err = fmt.Errorf("%w: speed mask %d, want 1 to 7", ErrRate, v)
		}
		p.speed = p.speed&^baseSpeeds | Speed(v)
		return true, err
	case "extspeed":
		v, err := assignment(rest, 8)
		if err == nil && v > 7 {
			err = fmt.Errorf("%w: extended speed mask %d, want 0 to 7", ErrRate, v)
		}
		p.speed = p.speed&^extSpeeds | extSpeedMask(v)
		return true, err
	case "pdebug":
		_, err := assignment(rest, 32)
		return true, err
	}
	return false, nil
}

// keyword returns the leading word of s: letters, '-' and a trailing ':'.
func keyword(s string) string {
	i := 0
	for i < len(s) && (isLetter(s[i]) || s[i] == '-') {
		i++
	}
	if i < len(s) && s[i] == ':' {
		i++
	}
	return s[:i]
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// guidLine handles switchguid=, caguid= and rtguid=: "=" sets the type's
// GUID counter, "+" sets it relative to the last "=" base. ibnetdiscover
// follows a switch GUID with its port GUID in parentheses.
func (p *parser) guidLine(typ NodeType, rest string) error {
	rest = strings.TrimSpace(stripComment(rest))
	if rest == "" || (rest[0] != '=' && rest[0] != '+') {
		return fmt.Errorf("%w: want '=' or '+' and a GUID", ErrSyntax)
	}
	relative := rest[0] == '+'
	val := strings.TrimSpace(rest[1:])
	if i := strings.IndexByte(val, '('); i >= 0 {
		if !strings.HasSuffix(val, ")") {
			return fmt.Errorf("%w: unclosed '(' in %q", ErrSyntax, val)
		}
		if _, err := parseHex(val[i+1 : len(val)-1]); err != nil {
			return err
		}
		val = strings.TrimSpace(val[:i])
	}
	g, err := parseCNumber(val, 64)
	if err != nil {
		return err
	}
	if relative {
		p.nextGUID[typ] = p.guidBase[typ] + g
	} else {
		p.guidBase[typ] = g
		p.nextGUID[typ] = g
	}
	return nil
}

// assignment parses "= number" with an optional trailing comment.
func assignment(rest string, bits int) (uint64, error) {
	rest = strings.TrimSpace(stripComment(rest))
	if rest == "" || rest[0] != '=' {
		return 0, fmt.Errorf("%w: want '=' and a number", ErrSyntax)
	}
	return parseCNumber(strings.TrimSpace(rest[1:]), bits)
}

// stripComment drops everything from the first '#' on.
func stripComment(s string) string {
	if i := strings.IndexByte(s, '#'); i >= 0 {
		return s[:i]
	}
	return s
}

func (p *parser) include(from, rest string) error {
	name := strings.TrimSpace(stripCommentOutsideQuotes(rest))
	if len(name) >= 2 && name[0] == '"' && name[len(name)-1] == '"' {
		name = name[1 : len(name)-1]
	}
	if name == "" || strings.ContainsRune(name, '"') {
		return fmt.Errorf("%w: include needs one file name", ErrSyntax)
	}
	if p.open == nil {
		return fmt.Errorf("%w: %q: includes need ParseFile or ParseFS", ErrInclude, name)
	}
	target, err := p.resolve(from, name)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInclude, err)
	}
	if slices.Contains(p.files, target) {
		return fmt.Errorf("%w: %q includes itself", ErrInclude, target)
	}
	if len(p.files) > maxIncludeDepth {
		return fmt.Errorf("%w: includes nest deeper than %d", ErrInclude, maxIncludeDepth)
	}
	f, err := p.open(target)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInclude, err)
	}
	defer f.Close()
	return p.file(f, target)
}

// endRecord adds the node being read, if any, to the topology.
func (p *parser) endRecord() error {
	rec := p.rec
	if rec == nil {
		return nil
	}
	p.rec = nil
	n := &rec.node
	n.GUID = p.nextGUID[n.Type]
	n.SystemImageGUID = p.sysImage
	n.VendorID = p.vendor
	n.DeviceID = p.device
	// As in ibsim: a switch takes one GUID, a CA or router one for the node
	// and one per port; the system image and vendor GUIDs apply once.
	if n.Type == Switch {
		p.nextGUID[n.Type]++
	} else {
		p.nextGUID[n.Type] += uint64(n.NumPorts) + 1
	}
	p.sysImage, p.vendor = 0, 0
	i, err := p.t.AddNode(*n)
	if err != nil {
		return &ParseError{File: rec.file, Line: rec.line, Err: err}
	}
	for _, pl := range rec.ports {
		pl.local.Node = i
		p.pending = append(p.pending, pl)
	}
	return nil
}

// cable links the ports every record lists, checking that each link is
// listed by both of its ends.
func (p *parser) cable() error {
	stated := make(map[PortRef]int, len(p.pending)) // port -> index in pending
	for i, pl := range p.pending {
		stated[pl.local] = i
	}
	fail := func(pl portLine, err error, format string, args ...any) error {
		return &ParseError{File: pl.file, Line: pl.line, Err: fmt.Errorf("%w: "+format, append([]any{err}, args...)...)}
	}
	for _, pl := range p.pending {
		me := func() string { return p.t.portName(pl.local) } // for errors only
		j, ok := p.t.Lookup(pl.peer)
		if !ok {
			return fail(pl, ErrDanglingLink, "%s names node %q, which is never defined", me(), pl.peer)
		}
		peer := PortRef{j, pl.peerPort}
		if n := p.t.nodes[j]; pl.peerPort > n.NumPorts {
			return fail(pl, ErrPortRange, "%s names port %d of %q, which has ports 1 to %d", me(), pl.peerPort, n.Name, n.NumPorts)
		}
		if peer == pl.local {
			return fail(pl, ErrAsymmetric, "%s is cabled to itself", me())
		}
		k, ok := stated[peer]
		if !ok {
			return fail(pl, ErrAsymmetric, "%s names %s, whose record does not list that port", me(), p.t.portName(peer))
		}
		back := p.pending[k]
		if back.peer != p.t.nodes[pl.local.Node].Name || back.peerPort != pl.local.Port {
			return fail(pl, ErrAsymmetric, "%s names %s, which names %q[%d] (%s:%d)", me(), p.t.portName(peer), back.peer, back.peerPort, back.file, back.line)
		}
		if comparePort(peer, pl.local) < 0 {
			continue // cabled from the other end
		}
		w := highestBit(pl.width & back.width)
		s := highestBit(pl.speed & back.speed)
		if w == 0 || s == 0 {
			return fail(pl, ErrRate, "%s and %s enable no common width or speed", me(), p.t.portName(peer))
		}
		if err := p.t.Connect(pl.local, peer, w, s); err != nil {
			return &ParseError{File: pl.file, Line: pl.line, Err: err}
		}
	}
	return nil
}
