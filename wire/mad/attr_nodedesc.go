package mad

import (
	"bytes"
	"unicode/utf8"
)

// NodeDescriptionSize is the length of the NodeDescription attribute.
const NodeDescriptionSize = 64

// NodeDescription is a view of the NodeDescription attribute (IBA
// 14.2.5.2), usually SMP.Data(): 64 bytes of UTF-8 text naming the node,
// NUL-padded, and not NUL-terminated when full:
//
//	   0                                                             63
//	  +---------------------------------------------------------------+
//	0 |                  NodeString (64 bytes, UTF-8)                 |
//	  +---------------------------------------------------------------+
//
// Its methods do not check lengths: callers must check IsValid first, or
// they may panic.
type NodeDescription []byte

// NodeDescriptionFields holds the NodeDescription, for building one.
type NodeDescriptionFields struct {
	Text string // at most NodeDescriptionSize bytes are kept
}

// IsValid reports whether b is long enough for a NodeDescription.
func (b NodeDescription) IsValid() bool { return len(b) >= NodeDescriptionSize }

// Text returns the "NodeString" field up to its first NUL.
func (b NodeDescription) Text() string {
	s := b[:NodeDescriptionSize]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return string(s)
}

// SetText sets the "NodeString" field to s, NUL-padded. A longer s is cut
// at the last whole UTF-8 character that fits, so the text stays valid.
func (b NodeDescription) SetText(s string) {
	if len(s) > NodeDescriptionSize {
		n := NodeDescriptionSize
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	clear(b[copy(b[:NodeDescriptionSize], s):NodeDescriptionSize])
}

// Encode writes f into b.
func (b NodeDescription) Encode(f *NodeDescriptionFields) { b.SetText(f.Text) }

// Fields returns the fields of b.
func (b NodeDescription) Fields() NodeDescriptionFields {
	return NodeDescriptionFields{Text: b.Text()}
}

// AppendNodeDescription appends a NodeDescription built from f to dst.
func AppendNodeDescription(dst []byte, f *NodeDescriptionFields) []byte {
	dst, b := grow(dst, NodeDescriptionSize)
	NodeDescription(b).Encode(f)
	return dst
}

// DecodeNodeDescription returns the NodeDescription in b, or an error if b
// is too short.
func DecodeNodeDescription(b []byte) (NodeDescriptionFields, error) {
	if !NodeDescription(b).IsValid() {
		return NodeDescriptionFields{}, truncated("NodeDescription", len(b), NodeDescriptionSize)
	}
	return NodeDescription(b).Fields(), nil
}
