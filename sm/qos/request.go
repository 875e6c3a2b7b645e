package qos

import (
	"errors"
	"fmt"
	"math"
	"regexp"

	"ibfab/internal/enum"
)

//go:generate go tool stringer -type=Scope -linecomment

// Scope says what a request's latency bounds.
type Scope uint8

// Scopes.
const (
	// EndToEnd bounds the latency from source to destination; each of the
	// path's n output ports gets 1/n of it.
	// EndToEnd: PerHop bounds the wait at every output port of the path.
	EndToEnd Scope = iota // e2e
	PerHop                // hop
)

// "" is EndToEnd, as requests may leave it out.
var scopes = enum.New("scope", EndToEnd, PerHop).EmptyIsZero()

// MarshalText implements encoding.TextMarshaler: the scope as requests
// spell it.
func (s Scope) MarshalText() ([]byte, error) { return scopes.Marshal(s) }

// UnmarshalText implements encoding.TextUnmarshaler: "e2e" or "hop" (""
// is e2e).
func (s *Scope) UnmarshalText(b []byte) error { return scopes.Unmarshal(s, b) }

// Request asks for a flow: Mbps of UD packets of Payload bytes from Src to
// Dst, each packet within LatencyUs (emulated time on the soft fabric).
type Request struct {
	// ID names the flow; [A-Za-z0-9_.-], at most 64 characters.
	ID string `json:"id"`
	// Src and Dst name CA ports: a node name or description ("ca4",
	// "ca4:2" for port 2), a node GUID (0x…, also with ":2"), or a LID.
	Src string `json:"src"`
	Dst string `json:"dst"`
	// Mbps is the mean bandwidth in 10^6 bits per second of wire bytes
	// (headers and CRCs included, as link rates count).
	Mbps float64 `json:"mbps"`
	// LatencyUs is the latency bound in microseconds, per Scope.
	LatencyUs float64 `json:"latency_us"`
	Scope     Scope   `json:"scope"`
	// Payload is the UD payload of the flow's packets (DefaultPayload
	// when 0): entries hold whole packets of this size.
	Payload int `json:"payload,omitempty"`
}

// Request limits.
const (
	DefaultPayload = 2048
	MaxPayload     = 4096
	maxIDLen       = 64
)

// UDOverhead is what a UD packet adds to its payload on the wire: LRH,
// BTH, DETH, ICRC and VCRC.
const UDOverhead = 8 + 12 + 8 + 4 + 2

// ErrRequest is wrapped by every error about a malformed request.
var ErrRequest = errors.New("qos: bad request")

var idPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// Normalize fills in the default payload and checks the request.
func (r *Request) Normalize() error {
	if r.Payload == 0 {
		r.Payload = DefaultPayload
	}
	switch {
	case len(r.ID) == 0 || len(r.ID) > maxIDLen || !idPattern.MatchString(r.ID):
		return fmt.Errorf("%w: id %q: 1-%d of [A-Za-z0-9_.-]", ErrRequest, r.ID, maxIDLen)
	case r.Src == "" || r.Dst == "":
		return fmt.Errorf("%w: flow %s: src and dst are required", ErrRequest, r.ID)
	case !(r.Mbps > 0) || math.IsInf(r.Mbps, 0):
		return fmt.Errorf("%w: flow %s: mbps %v, want a positive rate", ErrRequest, r.ID, r.Mbps)
	case !(r.LatencyUs > 0) || math.IsInf(r.LatencyUs, 0):
		return fmt.Errorf("%w: flow %s: latency_us %v, want a positive bound", ErrRequest, r.ID, r.LatencyUs)
	case r.Scope > PerHop:
		return fmt.Errorf("%w: flow %s: scope %d", ErrRequest, r.ID, r.Scope)
	case r.Payload < 0 || r.Payload > MaxPayload:
		return fmt.Errorf("%w: flow %s: payload %d, want 1-%d bytes", ErrRequest, r.ID, r.Payload, MaxPayload)
	}
	return nil
}

// PacketBytes is the size of one of the flow's packets on the wire.
func (r *Request) PacketBytes() int { return r.Payload + UDOverhead }
