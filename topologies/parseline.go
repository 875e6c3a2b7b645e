package topologies

import (
	"fmt"
	"strconv"
	"strings"
)

// Speed groups: ibsim keeps LinkSpeedEnabled (SDR, DDR, QDR) and
// LinkSpeedExtEnabled (FDR, EDR, HDR, NDR) apart; our Speed mask holds
// both, and XDR (IBA 1.5, which ibsim 0.12 does not know).
const (
	baseSpeeds = SpeedSDR | SpeedDDR | SpeedQDR
	extSpeeds  = SpeedFDR | SpeedEDR | SpeedHDR | SpeedNDR
)

// extSpeedMask maps a LinkSpeedExtEnabled mask (1 FDR, 2 EDR, 4 HDR, 8 NDR)
// to ours.
func extSpeedMask(v uint64) Speed {
	var m Speed
	for i, s := range []Speed{SpeedFDR, SpeedEDR, SpeedHDR, SpeedNDR} {
		if v&(1<<i) != 0 {
			m |= s
		}
	}
	return m
}

// commentWidthMask is the enabled width ibsim gives a port whose line shows
// a rate of that width: the width and the narrower ones it can fall back to.
var commentWidthMask = map[string]Width{
	"1":  Width1x,
	"2":  Width2x,
	"4":  Width1x | Width4x,
	"8":  Width8x,
	"12": Width1x | Width4x | Width12x,
}

// parseRate parses a link rate such as "4xQDR" into the enabled width and
// speed masks a port showing it gets: the speed and every slower one.
func parseRate(tok string) (Width, Speed, error) {
	w, s, ok := strings.Cut(tok, "x")
	wm, wok := commentWidthMask[w]
	sp, sok := parseSpeed(s)
	if !ok || !wok || !sok {
		return 0, 0, fmt.Errorf("%w: unknown link rate %q (valid: %s)", ErrRate, tok, ValidRates())
	}
	return wm, sp<<1 - 1, nil
}

// ParseRate parses a link rate as net files and the --rate flags spell
// it, "4xNDR": a width of 1, 2, 4, 8 or 12 lanes and a speed, case as
// ibnetdiscover prints it ("4XNDR" too). An unknown one is an ErrRate
// error listing the valid rates.
func ParseRate(s string) (Width, Speed, error) {
	w, sp, ok := strings.Cut(strings.ToLower(s), "x")
	wv, wok := map[string]Width{"1": Width1x, "2": Width2x, "4": Width4x, "8": Width8x, "12": Width12x}[w]
	spv, sok := parseSpeed(strings.ToUpper(sp))
	if !ok || !wok || !sok {
		return 0, 0, fmt.Errorf("%w: unknown link rate %q (valid: %s)", ErrRate, s, ValidRates())
	}
	return wv, spv, nil
}

// ValidRates lists the rates ParseRate takes, as "{1,2,4,8,12}x{SDR,…}".
func ValidRates() string {
	var names []string
	for s := SpeedSDR; s != 0 && s <= SpeedXDR; s <<= 1 {
		names = append(names, s.String())
	}
	return "{1,2,4,8,12}x{" + strings.Join(names, ",") + "}"
}

// looksLikeRate tells a rate ("4xSDR", or ibnetdiscover's "??x???" for an
// unknown one) from other words of a comment.
func looksLikeRate(tok string) bool {
	w, _, ok := strings.Cut(tok, "x")
	return ok && w != "" && strings.Trim(w, "0123456789?") == ""
}

// parseCNumber parses a whole string as C's strtoull with base 0 does:
// "0x" hexadecimal, a leading 0 octal, else decimal.
func parseCNumber(s string, bits int) (uint64, error) {
	base, digits := 10, s
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X"):
		base, digits = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, digits = 8, s[1:]
	}
	v, err := strconv.ParseUint(digits, base, bits)
	if err != nil {
		return 0, fmt.Errorf("%w: bad number %q", ErrSyntax, clip(s))
	}
	return v, nil
}

// parseHex parses a GUID printed in hexadecimal, with or without "0x".
func parseHex(s string) (uint64, error) {
	d := strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	v, err := strconv.ParseUint(d, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: bad GUID %q", ErrSyntax, clip(s))
	}
	return v, nil
}

// lexer walks one line.
type lexer struct {
	s   string
	pos int
}

func (l *lexer) peek() byte {
	if l.pos < len(l.s) {
		return l.s[l.pos]
	}
	return 0
}

func (l *lexer) rest() string { return l.s[l.pos:] }

// space skips blanks and reports whether there were any.
func (l *lexer) space() bool {
	start := l.pos
	for l.pos < len(l.s) && (l.s[l.pos] == ' ' || l.s[l.pos] == '\t') {
		l.pos++
	}
	return l.pos > start
}

// decimal reads an unsigned decimal number of at most five digits.
func (l *lexer) decimal() (int, bool) {
	start := l.pos
	for l.pos < len(l.s) && l.s[l.pos] >= '0' && l.s[l.pos] <= '9' && l.pos-start < 6 {
		l.pos++
	}
	if l.pos == start || l.pos-start > 5 {
		return 0, false
	}
	n, err := strconv.Atoi(l.s[start:l.pos])
	return n, err == nil
}

// quoted reads a double-quoted string.
func (l *lexer) quoted() (string, error) {
	if l.peek() != '"' {
		return "", fmt.Errorf("%w: want a quoted node name at %q", ErrSyntax, clip(l.rest()))
	}
	end := strings.IndexByte(l.s[l.pos+1:], '"')
	if end < 0 {
		return "", fmt.Errorf("%w: unterminated quote", ErrSyntax)
	}
	v := l.s[l.pos+1 : l.pos+1+end]
	l.pos += end + 2
	return v, nil
}

// bracket reads "[N]".
func (l *lexer) bracket() (int, error) {
	if l.peek() != '[' {
		return 0, fmt.Errorf("%w: want [port] at %q", ErrSyntax, clip(l.rest()))
	}
	l.pos++
	n, ok := l.decimal()
	if !ok || l.peek() != ']' {
		return 0, fmt.Errorf("%w: bad port number at %q", ErrSyntax, clip(l.rest()))
	}
	l.pos++
	return n, nil
}

// ext reads an optional "[ext N]".
func (l *lexer) ext() (int, bool, error) {
	if !strings.HasPrefix(l.rest(), "[ext") {
		return 0, false, nil
	}
	l.pos += len("[ext")
	l.space()
	n, ok := l.decimal()
	if !ok || l.peek() != ']' {
		return 0, false, fmt.Errorf("%w: bad [ext N] at %q", ErrSyntax, clip(l.rest()))
	}
	l.pos++
	return n, true, nil
}

// paren reads "(hex GUID)".
func (l *lexer) paren() (uint64, error) {
	end := strings.IndexByte(l.rest(), ')')
	if l.peek() != '(' || end < 0 {
		return 0, fmt.Errorf("%w: want (GUID) at %q", ErrSyntax, clip(l.rest()))
	}
	g, err := parseHex(l.s[l.pos+1 : l.pos+end])
	l.pos += end + 1
	return g, err
}

// token is a word of the part of a line after the peer: a bare word, a
// quoted string (with its quotes dropped) or the comment mark.
type token struct {
	text   string
	quoted bool
	hash   bool
}

func tokenize(s string) ([]token, error) {
	var toks []token
	l := lexer{s: s}
	for {
		l.space()
		switch c := l.peek(); {
		case c == 0:
			return toks, nil
		case c == '"':
			q, err := l.quoted()
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{text: q, quoted: true})
		case c == '#':
			l.pos++
			toks = append(toks, token{text: "#", hash: true})
		default:
			start := l.pos
			for l.pos < len(l.s) && !strings.ContainsRune(" \t\"#", rune(l.s[l.pos])) {
				l.pos++
			}
			toks = append(toks, token{text: l.s[start:l.pos]})
		}
	}
}

// stripCommentOutsideQuotes drops everything from the first '#' that is
// not inside double quotes.
func stripCommentOutsideQuotes(s string) string {
	in := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			in = !in
		case '#':
			if !in {
				return s[:i]
			}
		}
	}
	return s
}

// header starts a node record from a header line; rest follows the keyword.
func (p *parser) header(file string, no int, typ NodeType, rest string) error {
	l := lexer{s: rest}
	if !l.space() {
		return fmt.Errorf("%w: want blanks and the port count after %q", ErrSyntax, typ.String())
	}
	ports, ok := l.decimal()
	if !ok {
		return fmt.Errorf("%w: bad port count at %q", ErrSyntax, clip(l.rest()))
	}
	if ports < 1 || ports > MaxPorts {
		return fmt.Errorf("%w: %d ports, want 1 to %d", ErrPortRange, ports, MaxPorts)
	}
	if !l.space() {
		return fmt.Errorf("%w: want blanks and the quoted name after the port count", ErrSyntax)
	}
	name, err := l.quoted()
	if err != nil {
		return err
	}
	n := Node{Type: typ, Name: name, NumPorts: ports, Ports: make([]Port, ports+1)}
	after := strings.TrimSpace(l.rest())
	if after != "" {
		if after[0] != '#' {
			return fmt.Errorf("%w: unexpected %q after the node name", ErrSyntax, clip(after))
		}
		if err := headerComment(&n, strings.TrimSpace(after[1:])); err != nil {
			return err
		}
	}
	p.rec = &record{file: file, line: no, node: n}
	return nil
}

// headerComment reads the description and, for switches, port 0's kind,
// LID and LMC from a header's comment.
func headerComment(n *Node, c string) error {
	if strings.HasPrefix(c, `"`) {
		end := strings.IndexByte(c[1:], '"')
		if end < 0 {
			return fmt.Errorf("%w: unterminated quote in the description", ErrSyntax)
		}
		n.Description, c = c[1:1+end], c[2+end:]
	} else {
		// An unquoted description runs up to the first of the words
		// that follow it, as ibsim reads it.
		cut := len(c)
		for _, m := range []string{" enhanced port ", " base port ", " lid ", " lmc "} {
			if i := strings.Index(c, m); i >= 0 && i < cut {
				cut = i
			}
		}
		n.Description, c = strings.TrimSpace(c[:cut]), c[cut:]
	}
	f := strings.Fields(c)
	for i := 0; i < len(f); i++ {
		switch f[i] {
		case "enhanced", "base":
			if i+2 < len(f) && f[i+1] == "port" && f[i+2] == "0" {
				n.EnhancedPort0 = f[i] == "enhanced" && n.Type == Switch
				i += 2
			}
		case "lid", "lmc":
			if i+1 >= len(f) {
				return fmt.Errorf("%w: %q without a value", ErrSyntax, f[i])
			}
			v, err := parseCNumber(f[i+1], 16)
			if err != nil {
				return err
			}
			if f[i] == "lmc" && v > 7 {
				return fmt.Errorf("%w: lmc %d, want 0 to 7", ErrSyntax, v)
			}
			if n.Type == Switch {
				if f[i] == "lid" {
					n.Ports[0].LID = uint16(v)
				} else {
					n.Ports[0].LMC = uint8(v)
				}
			}
			i++
		}
	}
	return nil
}

// portLine reads one port line of the current record.
func (p *parser) portLine(file string, no int, s string) error {
	n := &p.rec.node
	l := lexer{s: s}
	port, err := l.bracket()
	if err != nil {
		return err
	}
	if port < 1 || port > n.NumPorts {
		return fmt.Errorf("%w: port %d of %q, which has ports 1 to %d", ErrPortRange, port, n.Name, n.NumPorts)
	}
	for _, pl := range p.rec.ports {
		if pl.local.Port == port {
			return fmt.Errorf("%w: port %d is listed twice (line %d)", ErrSyntax, port, pl.line)
		}
	}
	if ext, ok, err := l.ext(); err != nil {
		return err
	} else if ok {
		n.Ports[port].Ext = ext
	}
	l.space()
	if l.peek() == '(' {
		g, err := l.paren()
		if err != nil {
			return err
		}
		if n.Type == Switch {
			return fmt.Errorf("%w: switch port %d has a port GUID; only CA and router ports do", ErrSyntax, port)
		}
		n.Ports[port].GUID = g
		l.space()
	}
	pl := portLine{file: file, line: no, local: PortRef{Port: port}, peerPort: 1, width: p.width, speed: p.speed}
	if pl.peer, err = l.quoted(); err != nil {
		return err
	}
	// ibsim takes port 1 when the peer's port is left out.
	if l.peek() == '[' && !strings.HasPrefix(l.rest(), "[ext") {
		if pl.peerPort, err = l.bracket(); err != nil {
			return err
		}
		if pl.peerPort < 1 {
			return fmt.Errorf("%w: peer port 0", ErrPortRange)
		}
	}
	if _, _, err := l.ext(); err != nil {
		return err
	}
	save := l.pos
	if l.space(); l.peek() == '(' {
		if _, err := l.paren(); err != nil {
			return err
		}
	} else {
		l.pos = save
	}
	if err := p.portRest(n, &pl, l.rest()); err != nil {
		return err
	}
	p.rec.ports = append(p.rec.ports, pl)
	return nil
}

// portRest reads what follows the peer: ibsim's options (w=, s=, e=,
// anywhere on the line) and the comment with LIDs and the link rate.
func (p *parser) portRest(n *Node, pl *portLine, rest string) error {
	toks, err := tokenize(rest)
	if err != nil {
		return err
	}
	comment, err := pl.options(toks)
	if err != nil {
		return err
	}
	first, last := -1, -1
	for i, tk := range comment {
		if tk.quoted {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	// A CA or router port line starts its comment with its own LID and LMC.
	if n.Type != Switch && first > 0 {
		if err := ownLIDs(&n.Ports[pl.local.Port], comment[:first]); err != nil {
			return err
		}
	}
	return pl.rate(comment[last+1:])
}

// options applies the options among toks and returns the tokens of the
// comment, after the first '#', without them; anything else before the
// comment is an error.
func (pl *portLine) options(toks []token) (comment []token, err error) {
	inComment := false
	for _, tk := range toks {
		if tk.hash && !inComment {
			inComment = true
			continue
		}
		if k, v, ok := strings.Cut(tk.text, "="); ok && !tk.quoted && !tk.hash {
			if err := pl.option(k, v); err != nil {
				return nil, err
			}
			continue
		}
		if !inComment {
			return nil, fmt.Errorf("%w: unexpected %q after the peer", ErrSyntax, clip(tk.text))
		}
		comment = append(comment, tk)
	}
	return comment, nil
}

// ownLIDs reads "lid N" and "lmc M" from f, the start of a CA or router
// port line's comment, into port.
func ownLIDs(port *Port, f []token) error {
	for i := 0; i+1 < len(f); i++ {
		if f[i].text != "lid" && f[i].text != "lmc" {
			continue
		}
		v, err := parseCNumber(f[i+1].text, 16)
		if err != nil {
			return err
		}
		if f[i].text == "lid" {
			port.LID = uint16(v)
		} else if v > 7 {
			return fmt.Errorf("%w: lmc %d, want 0 to 7", ErrSyntax, v)
		} else {
			port.LMC = uint8(v)
		}
		i++
	}
	return nil
}

// rate reads the link rate of "lid N <rate>", the last such in tail (the
// comment after the peer's description). ibsim honours it on switch and
// CA lines only; we also read it on router lines, where ibnetdiscover
// prints the true rate too.
func (pl *portLine) rate(tail []token) error {
	for i := len(tail) - 3; i >= 0; i-- {
		if tail[i].text != "lid" || !looksLikeRate(tail[i+2].text) {
			continue
		}
		if _, err := parseCNumber(tail[i+1].text, 16); err != nil {
			return err
		}
		w, s, err := parseRate(tail[i+2].text)
		if err != nil {
			return err
		}
		pl.width, pl.speed = w, s
		return nil
	}
	return nil
}

// option applies one of ibsim's port options: w= enabled width mask, s=
// enabled speed mask, e= enabled extended speed mask. ibsim ignores others
// (ibnetdiscover -f adds v=, the VL capability).
func (pl *portLine) option(k, v string) error {
	var limit uint64
	switch k {
	case "w":
		limit = 31
	case "s":
		limit = 7
	case "e":
		limit = 15 // ibsim 0.10 stops at 7 (HDR); 8 is NDR
	default:
		return nil
	}
	x, err := parseCNumber(v, 8)
	if err != nil {
		return err
	}
	if x > limit || (x == 0 && k != "e") {
		return fmt.Errorf("%w: %s=%d out of range", ErrRate, k, x)
	}
	switch k {
	case "w":
		pl.width = Width(x)
	case "s":
		pl.speed = pl.speed&^baseSpeeds | Speed(x)
	case "e":
		pl.speed = pl.speed&^extSpeeds | extSpeedMask(x)
	}
	return nil
}

// Rate is a link rate, width and speed, as a flag takes it
// (flag.TextVar): "4xNDR". The zero value is no rate (leave the links as
// they are).
type Rate struct {
	Width Width
	Speed Speed
}

// String spells r as net files do, "" for the zero Rate.
func (r Rate) String() string {
	if r == (Rate{}) {
		return ""
	}
	return r.Width.String() + r.Speed.String()
}

// MarshalText spells r as String does.
func (r Rate) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText parses a rate as ParseRate does; "" is the zero Rate.
func (r *Rate) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*r = Rate{}
		return nil
	}
	w, s, err := ParseRate(string(b))
	if err != nil {
		return err
	}
	*r = Rate{Width: w, Speed: s}
	return nil
}

// SetRate sets every link of t to r; the zero Rate changes nothing.
func (t *Topology) SetRate(r Rate) error {
	if r == (Rate{}) {
		return nil
	}
	if r.Width.Lanes() == 0 || !singleBit(r.Speed) {
		return fmt.Errorf("%w: %v", ErrRate, r)
	}
	for i := range t.links {
		t.links[i].Width, t.links[i].Speed = r.Width, r.Speed
	}
	return nil
}
