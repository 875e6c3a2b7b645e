package link

import (
	"errors"
	"fmt"

	"ibfab/wire"
)

//go:generate go tool stringer -type=Kind -linecomment

// Kind says what an IBA packet on a link is, which on a veth is its
// EtherType.
type Kind uint8

// Packet kinds.
const (
	// KindData: IBA data packet (LRH ... VCRC), EtherType 0x88B5
	KindData Kind = iota + 1 // data
	// KindLink: IBA link packet (flow control, 6 bytes), EtherType 0x88B6
	KindLink // link
	// KindTraining is a physical-layer training frame (see Training): not
	// an IBA packet, it stands for what TS1/TS2 ordered sets carry below
	// the packet layer on a real link, and travels under its own
	// EtherType, EtherTypeTraining, which the capture path leaves out.
	KindTraining // training
)

// EtherTypeTraining is the EtherType of training frames: 0x88B7, IEEE
// 802's OUI-extended EtherType, whose payload starts with an OUI and a
// protocol number (see Training).
const EtherTypeTraining = 0x88B7

// MaxPacketSize is the largest data packet an Endpoint carries: the LRH
// PktLen field counts 4-byte words in 11 bits, and the 2-byte VCRC follows
// (IBA 1.2.1 §7.7.8). Link packets are always wire.FlowControlSize bytes.
const MaxPacketSize = 2047*4 + 2

// Errors an Endpoint returns from WritePacket.
var (
	// ErrKind means the Kind is neither KindData nor KindLink.
	ErrKind = errors.New("link: unknown packet kind")
	// ErrSize means the packet is empty or larger than MaxPacketSize.
	ErrSize = errors.New("link: bad packet size")
	// ErrNoCarrier means the medium is down; the packet is lost, as it
	// would be on a cable, and the caller counts it.
	ErrNoCarrier = errors.New("link: no carrier")
	// ErrNoTransmitter is what a decorator's SetTransmitter returns when
	// the endpoint it wraps cannot turn its transmitter off.
	ErrNoTransmitter = errors.New("link: no transmitter switch")
)

// EtherType returns the EtherType packets of kind k travel under on an
// Ethernet medium, 0 for an unknown kind.
func (k Kind) EtherType() uint16 {
	switch k {
	case KindData:
		return wire.EtherTypeData
	case KindLink:
		return wire.EtherTypeLink
	case KindTraining:
		return EtherTypeTraining
	}
	return 0
}

// KindOf returns the kind an EtherType carries, and false for any other
// EtherType.
func KindOf(etherType uint16) (Kind, bool) {
	switch etherType {
	case wire.EtherTypeData:
		return KindData, true
	case wire.EtherTypeLink:
		return KindLink, true
	case EtherTypeTraining:
		return KindTraining, true
	}
	return 0, false
}

// CheckPacket returns the error WritePacket must return for a packet of
// kind k and length n that it cannot carry (wrapping ErrKind or ErrSize),
// and nil for one it can. Implementations share it so that they all reject
// the same things.
func CheckPacket(k Kind, n int) error {
	switch k {
	case KindData, KindLink, KindTraining:
	default:
		return fmt.Errorf("%w %d", ErrKind, uint8(k))
	}
	if n <= 0 || n > MaxPacketSize {
		return fmt.Errorf("%w: %d bytes of %v", ErrSize, n, k)
	}
	return nil
}

// Endpoint is one port's transport: it carries IBA packets to and from the
// port at the other end of the link and reports whether the medium is up.
//
// All methods are safe for concurrent use. An Endpoint goes
// created → attached → closed; packets that arrive before Attach wait in
// the medium's receive buffer, as far as it holds them, and are delivered
// after it.
type Endpoint interface {
	// WritePacket transmits one IBA packet of kind k. The endpoint does not
	// retain pkt. It returns net.ErrClosed after Close, an error wrapping
	// ErrKind or ErrSize for a packet it cannot carry (see CheckPacket), and
	// ErrNoCarrier while the carrier is down. A nil error means the packet
	// left, not that it arrived: like a cable, the medium may still lose it.
	WritePacket(k Kind, pkt []byte) error

	// Attach starts delivering received packets and carrier changes to d.
	// Called once; later calls are ignored.
	Attach(d Dispatcher)

	// Carrier reports whether the medium is up (veth: IFF_LOWER_UP). A port
	// reads it after Attach for the initial state; changes after that are
	// reported through Dispatcher.CarrierChanged.
	Carrier() bool

	// Name is the interface or endpoint name, for logs and counters.
	Name() string

	// Close stops delivery and releases the endpoint; Dispatcher calls end
	// before it returns, so Close must not be called from inside one, nor
	// while holding a lock a Dispatcher call may wait for. Close is
	// idempotent; calls after the first return what the first returned.
	Close() error
}

// Transmitter is implemented by endpoints whose port can turn its
// transmitter off, as a port Disabled, or retraining, does on silicon: the
// medium loses its carrier at both ends at once, so the peer's port goes
// Down as on a pulled cable, and turning it back on lets the link train
// again once both ends transmit.
type Transmitter interface {
	// SetTransmitter turns the transmitter on or off. The carrier changes
	// it causes reach this end's Dispatcher too, like any other. It must
	// not be called while holding a lock a Dispatcher call may wait for.
	SetTransmitter(on bool) error
}

// Dispatcher receives what an Endpoint delivers.
type Dispatcher interface {
	// DeliverPacket is called for each received packet, from a single
	// goroutine per endpoint; pkt is valid only during the call. The bytes
	// are what the peer sent, unchecked: the receiver verifies CRCs and
	// lengths and counts what is bad. A packet may be followed by padding
	// the medium added: wire.PacketLen finds a data packet's end, and a
	// link packet is wire.FlowControlSize bytes.
	DeliverPacket(k Kind, pkt []byte)

	// CarrierChanged is called when the medium goes up or down. Calls are
	// serialized with each other but may run concurrently with
	// DeliverPacket. It reports a level, not an edge: a call may repeat the
	// state the port already knows (it raced with the port's Carrier read).
	CarrierChanged(up bool)
}
