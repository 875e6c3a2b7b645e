package partition

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"

	"ibfab/wire/mad"
)

// Config is a parsed partitions.conf: its definitions in file order. A
// nil Config, or one without definitions (an empty file, or comments
// only), is OpenSM's configuration without a file: every end port a full
// member of the Default partition.
type Config struct {
	File        string // the name Parse was given, for messages
	Definitions []Definition
	// Warnings are what the file has that OpenSM passes over (an unknown
	// flag, an unknown membership), each "FILE:LINE: text".
	Warnings []string
}

// Empty reports whether c defines nothing, so that the Default partition
// alone, every port a full member, is in effect.
func (c *Config) Empty() bool { return c == nil || len(c.Definitions) == 0 }

// Definition is one "Name=PKey,flags : members ;".
type Definition struct {
	Line int    // where its header is
	Name string // "" when none was given
	// PKey is the P_Key as written, membership bit and all; HasPKey is
	// false when none was (the P_Key then comes from the name, or is
	// generated).
	PKey    mad.PKey
	HasPKey bool
	IPoIB   bool // the ipoib flag
	Indx0   bool // the indx0 flag: this P_Key goes to index 0
	// DefMember is the membership of the members written without one.
	DefMember Membership
	// Group is the multicast group flags of the partition (its IPoIB
	// broadcast group, and the defaults of its mgid groups).
	Group   GroupFlags
	Members []Member
	MGroups []MGroup
}

//go:generate go tool stringer -type=Membership,MemberKind -linecomment

// Membership is a member's kind of membership.
type Membership uint8

// Memberships.
const (
	Limited Membership = iota // limited
	Full                      // full
	// Both: full and limited; a full membership in OpenSM's default mode
	Both // both
)

// IsFull reports whether m gives the full member's key.
func (m Membership) IsFull() bool { return m != Limited }

// MemberKind says which ports a member names.
type MemberKind uint8

// Member kinds.
const (
	// MemberGUID: one port, by GUID
	MemberGUID MemberKind = iota // GUID
	// MemberAll: every end port
	MemberAll // ALL
	// MemberAllCAs: every CA port
	MemberAllCAs // ALL_CAS
	// MemberAllSwitches: every switch's port 0
	MemberAllSwitches // ALL_SWITCHES
	// MemberAllRouters: every router port
	MemberAllRouters // ALL_ROUTERS
	// MemberSelf: the SM's own port
	MemberSelf // SELF
)

var memberKeywords = []struct {
	word string
	kind MemberKind
}{
	// OpenSM's order of trial, which decides what a prefix means.
	{"ALL", MemberAll}, {"ALL_CAS", MemberAllCAs}, {"ALL_SWITCHES", MemberAllSwitches},
	{"ALL_ROUTERS", MemberAllRouters}, {"SELF", MemberSelf},
}

// Member is one entry of a definition's port list.
type Member struct {
	Line       int
	Kind       MemberKind
	GUID       uint64 // MemberGUID's
	Membership Membership
}

// GroupFlags are a multicast group's parameters, in IBA's encodings. OpenSM
// creates the groups through its SA; ibsm has none and keeps them only to
// read the file whole.
type GroupFlags struct {
	MTU, Rate uint8  // IBA codes (4 = 2048 bytes, 3 = 10 Gb/s)
	SL        uint8  // 0-15
	Scopes    uint16 // bit s for scope s; none: link-local
	QKey      uint32
	TClass    uint8
	FlowLabel uint32 // 20 bits
}

// DefaultGroupFlags are OpenSM's: MTU 2048, 10 Gb/s, SL 0.
var DefaultGroupFlags = GroupFlags{MTU: 4, Rate: 3}

// MGroup is an "mgid=GID,flags" entry.
type MGroup struct {
	Line  int
	MGID  netip.Addr
	Flags GroupFlags
}

// Error is a line of the file that cannot be read.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Load reads the partitions.conf at path. A file that does not exist is
// an error (fs.ErrNotExist): OpenSM would run as without one, but a file
// named and missing is more likely a mistake.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("partitions: %w", err)
	}
	return Parse(bytes.NewReader(b), path)
}

// Parse reads a partitions.conf from r; name is the file's name in
// messages. The first line it cannot read is the error, an *Error.
func Parse(r io.Reader, name string) (*Config, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("partitions: %s: %w", name, err)
	}
	p := &parser{name: name, cfg: &Config{File: name}}
	for i, line := range strings.Split(string(b), "\n") {
		p.line = i + 1
		if err := p.parseLine(line); err != nil {
			return nil, err
		}
	}
	if p.cur != nil {
		p.warn(p.cur.Line, "the definition is not ended by ';' (taken as if it were)")
		p.close()
	}
	return p.cfg, nil
}

// parser reads a file line by line, as OpenSM does: a token never spans
// lines, a definition's members may.
type parser struct {
	name string
	cfg  *Config
	cur  *Definition // the definition being read: its header was, its ';' not yet
	line int
}

func (p *parser) errorf(format string, args ...any) error {
	return &Error{File: p.name, Line: p.line, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) warn(line int, format string, args ...any) {
	p.cfg.Warnings = append(p.cfg.Warnings, fmt.Sprintf("%s:%d: %s", p.name, line, fmt.Sprintf(format, args...)))
}

// space is what OpenSM skips between tokens, and '\r' (a file written on
// another system).
const space = " \t\r\v\f"

func (p *parser) parseLine(line string) error {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	for {
		line = strings.TrimLeft(line, space)
		if line == "" {
			return nil
		}
		seg, rest, ended := strings.Cut(line, ";")
		if err := p.statement(seg); err != nil {
			return err
		}
		if !ended {
			return nil
		}
		p.close()
		line = rest
	}
}

// close ends the definition being read.
func (p *parser) close() {
	if p.cur != nil {
		p.cfg.Definitions = append(p.cfg.Definitions, *p.cur)
		p.cur = nil
	}
}

// statement reads one line's part of a definition, up to its ';' or the
// line's end.
func (p *parser) statement(seg string) error {
	if p.cur != nil {
		return p.members(seg)
	}
	header, members, ok := strings.Cut(seg, ":")
	if !ok {
		if strings.Trim(seg, space) == "" {
			return p.errorf("empty partition definition (a ';' with nothing before it)")
		}
		return p.errorf("no partition definition: want \"Name[=PKey][,flag...] : members ;\", with the ':' on the header's line")
	}
	if err := p.header(header); err != nil {
		return err
	}
	return p.members(members)
}

// token splits "name=value" at its first '=' and trims both.
func token(s string) (name, value string, hasValue bool) {
	name, value, hasValue = strings.Cut(s, "=")
	return strings.Trim(name, space), strings.Trim(value, space), hasValue
}

// header reads "Name[=PKey][,flag[=value]]..." and opens the definition.
func (p *parser) header(h string) error {
	parts := strings.Split(h, ",")
	name, id, hasID := token(parts[0])
	d := &Definition{Line: p.line, Name: name, DefMember: Limited, Group: DefaultGroupFlags}
	if !hasID && name != "" && name[0] >= '0' && name[0] <= '9' {
		d.Name, id, hasID = "", name, true // "0x10 : ..." names the P_Key alone
	}
	if hasID {
		v, err := parseNumber(id, 16)
		if err != nil {
			return p.errorf("bad P_Key %q: %v", id, err)
		}
		d.PKey, d.HasPKey = mad.PKey(v), true
	}
	for _, f := range parts[1:] {
		p.flag(d, f)
	}
	p.cur = d
	return nil
}

// The flags OpenSM knows, in the order it tries them: a flag given as a
// prefix of one of them is the first it is a prefix of.
const (
	flagMTU = iota
	flagRate
	flagScope
	flagQKey
	flagTClass
	flagSL
	flagFlowLabel
	numGroupFlags
)

var groupFlagNames = [numGroupFlags]string{"mtu", "rate", "scope", "Q_Key", "TClass", "sl", "FlowLabel"}

// flag reads one partition flag into d.
func (p *parser) flag(d *Definition, f string) {
	name, val, hasVal := token(f)
	switch {
	case name == "":
		p.warn(p.line, "an empty partition flag (ignored)")
	case p.groupFlag(&d.Group, name, val, hasVal):
	case strings.HasPrefix("ipoib", name):
		d.IPoIB = true
	case strings.HasPrefix("defmember", name):
		m, ok := membership(val)
		if !hasVal || val == "" || !ok {
			p.warn(p.line, "defmember %q: want full, limited or both (ignored)", val)
			return
		}
		d.DefMember = m
	case name == "indx0":
		d.Indx0 = true
	default:
		p.warn(p.line, "unknown partition flag %q (ignored)", name)
	}
}

// groupFlag reads name=val into g when name is a multicast group flag,
// and reports whether it is one. A value that does not do is a warning
// and leaves g as it was, as in OpenSM.
func (p *parser) groupFlag(g *GroupFlags, name, val string, hasVal bool) bool {
	which := -1
	for i, n := range groupFlagNames {
		if strings.HasPrefix(n, name) {
			which = i
			break
		}
	}
	if which < 0 {
		return false
	}
	bad := func(want string) {
		p.warn(p.line, "flag %s=%q: want %s (ignored)", groupFlagNames[which], val, want)
	}
	v, err := parseNumber(val, 32)
	if !hasVal || err != nil {
		bad("a number")
		return true
	}
	switch which {
	case flagMTU, flagRate:
		if v == 0 || v > 0xff {
			bad("an IBA code from 1")
			return true
		}
		if which == flagMTU {
			g.MTU = uint8(v)
		} else {
			g.Rate = uint8(v)
		}
	case flagScope:
		if v == 0 || v > 15 {
			bad("a scope from 1 to 15")
			return true
		}
		g.Scopes |= 1 << v
	case flagQKey:
		g.QKey = uint32(v)
	case flagTClass:
		if v > 0xff {
			bad("0 to 255")
			return true
		}
		g.TClass = uint8(v)
	case flagSL:
		if v > 15 {
			bad("an SL from 0 to 15")
			return true
		}
		g.SL = uint8(v)
	case flagFlowLabel:
		if v > 0xfffff {
			bad("20 bits")
			return true
		}
		g.FlowLabel = uint32(v)
	}
	return true
}

// membership reads "full", "limited" or "both", or a prefix of one.
func membership(s string) (Membership, bool) {
	switch {
	case s == "":
		return Limited, false
	case strings.HasPrefix("full", s):
		return Full, true
	case strings.HasPrefix("both", s):
		return Both, true
	case strings.HasPrefix("limited", s):
		return Limited, true
	}
	return Limited, false
}

// members reads a comma-separated port list (or its part on one line)
// into the definition being read.
func (p *parser) members(s string) error {
	d := p.cur
	parts := strings.Split(s, ",")
	for i, m := range parts {
		name, val, hasVal := token(m)
		if name == "mgid" {
			p.mgroup(d, val, hasVal, parts[i+1:])
			return nil
		}
		if err := p.member(d, name, val, hasVal); err != nil {
			return err
		}
	}
	return nil
}

// member reads one "port[=membership]".
func (p *parser) member(d *Definition, name, val string, hasVal bool) error {
	switch {
	case name == "" && hasVal:
		p.warn(p.line, "a membership %q with no port (ignored)", val)
		return nil
	case name == "", strings.HasPrefix("NONE", name):
		return nil // an empty list, or NONE: no port
	}
	m := Member{Line: p.line, Membership: d.DefMember}
	if hasVal {
		if val == "" {
			return p.errorf("port %s: empty membership after '=' (want full, limited or both)", name)
		}
		var ok bool
		if m.Membership, ok = membership(val); !ok {
			p.warn(p.line, "port %s: unknown membership %q (taken as limited, as OpenSM does)", name, val)
		}
	}
	m.Kind = MemberGUID
	found := false
	for _, w := range memberKeywords {
		if strings.HasPrefix(w.word, name) {
			m.Kind, found = w.kind, true
			break
		}
	}
	if !found {
		g, err := parseNumber(name, 64)
		switch {
		case err != nil:
			return p.errorf("bad port GUID %q: %v (or ALL, ALL_CAS, ALL_SWITCHES, ALL_ROUTERS, SELF)", name, err)
		case g == 0:
			return p.errorf("bad port GUID %q: 0 is no port", name)
		}
		m.GUID = g
	}
	d.Members = append(d.Members, m)
	return nil
}

// mgroup reads "mgid=GID" and the group flags after it, the rest of the
// line's part of the definition. A GID that is not multicast is a
// warning: OpenSM logs it and goes on without the group.
func (p *parser) mgroup(d *Definition, gid string, hasVal bool, flags []string) {
	g := MGroup{Line: p.line, Flags: d.Group}
	a, err := netip.ParseAddr(gid)
	switch {
	case !hasVal || err != nil || !a.Is6() || a.Zone() != "":
		p.warn(p.line, "mgid %q is not a GID (group ignored)", gid)
		return
	case a.As16()[0] != 0xff:
		p.warn(p.line, "mgid %s is not a multicast GID (group ignored)", gid)
		return
	}
	g.MGID = a
	for _, f := range flags {
		name, val, hasVal := token(f)
		switch {
		case name == "":
			p.warn(p.line, "an empty multicast group flag (ignored)")
		case !p.groupFlag(&g.Flags, name, val, hasVal):
			p.warn(p.line, "unknown multicast group flag %q (ignored)", name)
		}
	}
	d.MGroups = append(d.MGroups, g)
}

// errRange and errSyntax are parseNumber's reasons.
var (
	errSyntax = errors.New("not a number (0x hex, 0 octal, or decimal)")
	errRange  = errors.New("too large")
)

// parseNumber reads an unsigned number as C's strtoul with base 0 does
// (0x hex, a leading 0 octal, else decimal), but whole: no sign, nothing
// after it, and no more than bits bits.
func parseNumber(s string, bits uint) (uint64, error) {
	base, digits := uint64(10), s
	switch {
	case len(s) > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
		base, digits = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, digits = 8, s[1:]
	}
	if digits == "" {
		return 0, errSyntax
	}
	var v uint64
	limit := uint64(1)<<bits - 1
	if bits >= 64 {
		limit = ^uint64(0)
	}
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, errSyntax
		}
		if d >= base {
			return 0, errSyntax
		}
		if v > (limit-d)/base {
			return 0, errRange
		}
		v = v*base + d
	}
	return v, nil
}
