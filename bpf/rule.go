package bpf

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"ibfab/internal/enum"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// MaxRules is how many rules one Attachment holds.
const MaxRules = 16

// RateOne is a rate of 100 %: rates are in parts per million.
const RateOne = 1_000_000

// MaxDelay bounds a delay rule: the fq qdisc drops frames timed further
// ahead than its horizon (SetupFQ sets it above this).
const MaxDelay = 5 * time.Second

//go:generate go tool stringer -type=Action -linecomment

// Action is what a rule does to a matching frame.
type Action uint8

// Actions, named as ibfab fault spells them; the values are fault.c's
// enum action.
const (
	Drop    Action = 1 // drop
	Corrupt Action = 2 // corrupt
	Delay   Action = 3 // delay
)

var actions = enum.New("fault action", Drop, Corrupt, Delay)

// MarshalText implements encoding.TextMarshaler.
func (a Action) MarshalText() ([]byte, error) { return actions.Marshal(a) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *Action) UnmarshalText(b []byte) error { return actions.Unmarshal(a, b) }

// Field is a set of match fields; a rule compares only those it has.
type Field uint32

// Match fields; the values are fault.c's enum match_field.
const (
	FieldEtherType Field = 1 << iota
	FieldVL
	FieldSL
	FieldDLID
	FieldSLID
	FieldClass
	FieldMethod
	FieldAttr
	allFields = FieldEtherType | FieldVL | FieldSL | FieldDLID | FieldSLID | FieldClass | FieldMethod | FieldAttr
)

// Match says which frames a rule applies to: those whose fields in Fields
// equal the values here. A frame without one of the fields (SL on a link
// packet, a MAD class on a data packet not for QP0/QP1) does not match.
type Match struct {
	Fields    Field
	EtherType uint16
	VL, SL    uint8
	DLID      uint16
	SLID      uint16
	Class     mad.MgmtClass
	Method    mad.Method // the whole byte: GetResp is not Get
	Attr      mad.AttrID
}

// Rule is one fault: an action on the frames that match, at Rate per
// million of them, at most Limit times (0: no limit).
type Rule struct {
	Action Action
	Match  Match
	Rate   uint32
	Limit  uint64
	Delay  time.Duration // Delay rules
}

// Validate reports what is wrong with r, if anything.
func (r Rule) Validate() error {
	switch r.Action {
	case Drop, Corrupt:
		if r.Delay != 0 {
			return fmt.Errorf("a %v rule has no delay", r.Action)
		}
	case Delay:
		if r.Delay <= 0 || r.Delay > MaxDelay {
			return fmt.Errorf("delay %v: want more than 0 and at most %v", r.Delay, MaxDelay)
		}
	default:
		return fmt.Errorf("unknown action %d", r.Action)
	}
	if r.Rate == 0 || r.Rate > RateOne {
		return fmt.Errorf("rate %d per million: want 1 to %d", r.Rate, RateOne)
	}
	m := r.Match
	if m.Fields&^allFields != 0 {
		return fmt.Errorf("unknown match fields %#x", uint32(m.Fields&^allFields))
	}
	if m.Fields&(FieldVL) != 0 && m.VL > 15 {
		return fmt.Errorf("VL %d: want 0-15", m.VL)
	}
	if m.Fields&FieldSL != 0 && m.SL > 15 {
		return fmt.Errorf("SL %d: want 0-15", m.SL)
	}
	lrh := m.Fields&(FieldSL|FieldDLID|FieldSLID|FieldClass|FieldMethod|FieldAttr) != 0
	if m.Fields&FieldEtherType != 0 && m.EtherType != wire.EtherTypeData && lrh {
		return errors.New("SL, LIDs and MAD fields are only in data packets (EtherType 0x88b5)")
	}
	return nil
}

// encode returns r as fault.c's struct rule.
func (r Rule) encode() faultRule {
	m := r.Match
	return faultRule{
		Fields:    uint32(m.Fields),
		Action:    uint8(r.Action),
		Vl:        m.VL,
		Sl:        m.SL,
		MgmtClass: uint8(m.Class),
		Method:    uint8(m.Method),
		Ethertype: m.EtherType,
		Dlid:      m.DLID,
		Slid:      m.SLID,
		AttrId:    uint16(m.Attr),
		Rate:      r.Rate,
		DelayNs:   uint64(r.Delay),
		Limit:     r.Limit,
	}
}

// decodeRule is the inverse of encode.
func decodeRule(f faultRule) Rule {
	return Rule{
		Action: Action(f.Action),
		Match: Match{
			Fields:    Field(f.Fields),
			EtherType: f.Ethertype,
			VL:        f.Vl,
			SL:        f.Sl,
			DLID:      f.Dlid,
			SLID:      f.Slid,
			Class:     mad.MgmtClass(f.MgmtClass),
			Method:    mad.Method(f.Method),
			Attr:      mad.AttrID(f.AttrId),
		},
		Rate:  f.Rate,
		Limit: f.Limit,
		Delay: time.Duration(f.DelayNs),
	}
}

// String returns r as ibfab fault's flags would write it, such as
// "--drop 5% --class 0x81 --attr NodeInfo --count 3".
func (r Rule) String() string {
	var b strings.Builder
	switch r.Action {
	case Delay:
		fmt.Fprintf(&b, "--delay %v", r.Delay)
		if r.Rate != RateOne {
			fmt.Fprintf(&b, " --rate %s", FormatRate(r.Rate))
		}
	default:
		fmt.Fprintf(&b, "--%v %s", r.Action, FormatRate(r.Rate))
	}
	m := r.Match
	if m.Fields&FieldEtherType != 0 {
		switch m.EtherType {
		case wire.EtherTypeData:
			b.WriteString(" --ethertype data")
		case wire.EtherTypeLink:
			b.WriteString(" --ethertype link")
		default:
			fmt.Fprintf(&b, " --ethertype %#04x", m.EtherType)
		}
	}
	if m.Fields&FieldVL != 0 {
		fmt.Fprintf(&b, " --vl %d", m.VL)
	}
	if m.Fields&FieldSL != 0 {
		fmt.Fprintf(&b, " --sl %d", m.SL)
	}
	if m.Fields&FieldDLID != 0 {
		fmt.Fprintf(&b, " --dlid %d", m.DLID)
	}
	if m.Fields&FieldSLID != 0 {
		fmt.Fprintf(&b, " --slid %d", m.SLID)
	}
	if m.Fields&FieldClass != 0 {
		fmt.Fprintf(&b, " --class %#02x", uint8(m.Class))
	}
	if m.Fields&FieldMethod != 0 {
		if s := m.Method.String(); !strings.HasPrefix(s, "Method(") {
			fmt.Fprintf(&b, " --method %s", s)
		} else {
			fmt.Fprintf(&b, " --method %#02x", uint8(m.Method))
		}
	}
	if m.Fields&FieldAttr != 0 {
		// Without a class, a name only where the SM and PMA tables agree.
		s := m.Attr.Name(mad.ClassSubnLID)
		if m.Fields&FieldClass != 0 {
			s = m.Attr.Name(m.Class)
		} else if p := m.Attr.Name(mad.ClassPerfMgt); p != s && !strings.HasPrefix(p, "AttrID(") {
			s = "AttrID("
		}
		if !strings.HasPrefix(s, "AttrID(") {
			fmt.Fprintf(&b, " --attr %s", s)
		} else {
			fmt.Fprintf(&b, " --attr %#04x", uint16(m.Attr))
		}
	}
	if r.Limit != 0 {
		fmt.Fprintf(&b, " --count %d", r.Limit)
	}
	return b.String()
}

// ParseRate parses a rate as a percentage ("5%", "0.5%") or per mille
// ("3‰") into parts per million.
func ParseRate(s string) (uint32, error) {
	num, scale := s, 0.0
	switch {
	case strings.HasSuffix(s, "%"):
		num, scale = strings.TrimSuffix(s, "%"), 1e4
	case strings.HasSuffix(s, "‰"):
		num, scale = strings.TrimSuffix(s, "‰"), 1e3
	default:
		return 0, fmt.Errorf("rate %q: want a percentage (5%%) or per mille (3‰)", s)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || v != v {
		return 0, fmt.Errorf("rate %q: not a number", s)
	}
	ppm := v * scale
	if ppm < 1 || ppm > RateOne+1e-6 {
		return 0, fmt.Errorf("rate %q: want more than 0 (at least one per million) and at most 100%%", s)
	}
	return uint32(ppm + 0.5), nil
}

// FormatRate writes a rate in parts per million as a percentage.
func FormatRate(ppm uint32) string {
	return strconv.FormatFloat(float64(ppm)/1e4, 'f', -1, 64) + "%"
}
