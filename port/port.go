package port

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"ibfab/internal/clock"
	"ibfab/link"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// Errors of Send. The packet is dropped and counted in each case.
var (
	ErrNotActive = errors.New("port: state does not let the packet through")
	ErrVL        = errors.New("port: VL not operational")
	ErrMalformed = errors.New("port: malformed packet")
	ErrInputDown = errors.New("port: the packet's input port went Down")
)

// Port is one IBA port's link layer over a link.Endpoint: per-VL output
// queues, VL arbitration, 8b/10b pacing, credit flow control, the port
// state machine and the PMA counters. It is the endpoint's Dispatcher.
type Port struct {
	ep     link.Endpoint
	tr     link.Transmitter // ep's transmitter switch; nil if it has none
	cfg    Config           // immutable after New
	rcv    Receiver
	rate   atomic.Uint64 // data rate, bits/s, at the width and speed active
	maxPkt int           // longest packet, bytes
	// supW and supS are the widths and speeds the port supports.
	supW mad.LinkWidth
	supS mad.LinkSpeed

	wg sync.WaitGroup // the transmitter goroutine

	// mu protects every field below (the queues in tx included) and
	// serializes the Timers' Reset and Stop calls.
	mu sync.Mutex

	closed  bool
	carrier bool
	phys    mad.PhysState
	state   mad.PortState
	operVLs int

	tx       [numVLs]txVL
	rx       [numVLs]rxVL
	vl15Used int // VL15 receive buffer slots taken
	arb      arbiter
	fcDue    uint16 // data VLs owed a flow-control packet, bit per VL
	slack    int    // Config.CreditSlack, or as SetCreditSlack set it

	// The transmitter parks on txCond until wake; WaitIdle waits on
	// idleCond for it to park; Send waits on spaceCond for queue space.
	txCond, idleCond, spaceCond sync.Cond
	wake, parked                bool
	// writing is set while a writer other than the transmitter (a
	// receiver returning credits) holds the endpoint; the transmitter
	// waits for it, so the wire order stays the one FCTBS counts.
	writing bool
	fcBuf   []byte // the inline writer's flow-control packets
	keepVL  int    // the data VL the last keepalive refreshed
	written uint64 // packets handed to the endpoint

	// Link width and speed: enabled, active (last trained at), and the
	// peer's training frame (peerKnown: since the carrier last came up);
	// tsDue says a training frame is owed, tsReply that it is a Reply.
	enW, actW      mad.LinkWidth
	enS, actS      mad.LinkSpeed
	peer           link.Training
	peerKnown      bool
	tsDue, tsReply bool

	// txOff: the port wants its transmitter off; txDirty: that changed
	// since syncTransmitter last looked; draining: the transmitter goes
	// dark when drainTimer fires, and only VL15 leaves until then.
	txOff, txDirty, draining bool
	drainTimer, retrainTimer clock.Timer

	pace       pacer
	paceTimer  clock.Timer
	paceArmed  bool
	paceAt     time.Time
	keepTimer  clock.Timer
	liveTimer  clock.Timer
	keepAt     time.Time // when keepTimer fires
	liveAt     time.Time // when liveTimer fires
	lastLinkRx time.Time
	lastFCTx   time.Time // the last flow-control packet sent
	waitSince  time.Time // when the current credit wait began, or zero

	cnt   counters
	cong  congestion // FECN marking's view of the queues, and its counters
	drops DropCounts
	lc    LinkCounters
	// vlTx counts what the transmitter wrote per VL; unlike cnt, no PMA
	// Set resets it (status and QoS checks read it as a running total).
	vlTx [numVLs]VLXmit

	toRelease  []*Packet // dropped under mu, released by unlock
	events     []stateEvent
	delivering bool

	// txMu serializes syncTransmitter; txOn (under txMu) is the state the
	// endpoint's transmitter was last set to, txErrors its failures.
	txMu     sync.Mutex
	txOn     bool
	txErrors atomic.Uint64

	// downs counts the times the port went Down, written under mu; a
	// received packet carries the count of its arrival, which tells other
	// ports, without this port's lock, that its input buffer is gone.
	downs atomic.Uint64
}

// txVL is the transmit side of one VL: its queue and, for data VLs, the
// sender's credit counters.
type txVL struct {
	q     fifo
	fctbs uint16 // total blocks sent, mod 4096
	fccl  uint16 // credit limit from the peer
	// maxWin is the largest credit window (FCCL − FCTBS) the peer's
	// flow-control packets gave since the link trained: its buffer for
	// the VL, as far as the port can tell (Downstream).
	maxWin int
}

// rxVL is the receive side of one data VL.
type rxVL struct {
	abr  uint16 // adjusted blocks received, mod 4096
	used int    // blocks held by unreleased packets
	fccl uint16 // the credit limit last advertised
	// capacity is the VL's buffer in blocks (Config.VLBlocks, RxBlocks,
	// SetVLBlocks). admit, when above it, is what the port still takes
	// after SetVLBlocks shrank the buffer: the old size, which bounds the
	// blocks held and the credit granted then, which the peer may use
	// until it hears the new limit; releases bring it down to capacity.
	capacity, admit int
}

var _ link.Dispatcher = (*Port)(nil)

// New returns a port that runs on ep, which it now owns (Close closes it),
// and hands what it receives to rcv (nil discards it). The port starts
// Down, and Polling: it trains as soon as the carrier is up and the peer's
// link packets arrive.
func New(ep link.Endpoint, cfg Config, rcv Receiver) (*Port, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	rate, _ := mad.DataRate(cfg.Width, cfg.Speed) // checked by withDefaults
	p := &Port{
		ep:      ep,
		cfg:     cfg,
		rcv:     rcv,
		maxPkt:  cfg.MTU + maxHeaderBytes,
		actW:    cfg.Width,
		actS:    cfg.Speed,
		phys:    physPolling,
		state:   portDown,
		operVLs: cfg.DataVLs,
		slack:   cfg.CreditSlack,
		pace:    pacer{rate: rate},
		txOn:    true,
	}
	p.tr, _ = ep.(link.Transmitter)
	p.rate.Store(rate)
	p.supW, p.supS = link.Supported(cfg.Width, cfg.Speed)
	p.enW, p.enS = p.supW, p.supS
	p.txCond.L, p.idleCond.L, p.spaceCond.L = &p.mu, &p.mu, &p.mu
	p.arb.set(DefaultArbitration(cfg.DataVLs))
	caps, _ := cfg.vlCapacities(cfg.VLBlocks) // checked by withDefaults
	for vl, c := range caps {
		p.rx[vl].capacity, p.rx[vl].admit = c, c
	}

	p.wg.Add(1)
	go p.transmit()

	ep.Attach(p)
	p.mu.Lock()
	p.keepAt = cfg.Clock.Now().Add(cfg.KeepaliveInterval)
	p.keepTimer = cfg.Clock.AfterFunc(cfg.KeepaliveInterval, p.keepalive)
	// Read under mu: a CarrierChanged that overtakes this read has already
	// stored the level it reports, so the port cannot end up with a stale
	// one.
	p.carrierLocked(ep.Carrier())
	p.unlock()
	return p, nil
}

// Close stops the port: queued packets are released uncounted, the timers
// and the transmitter stop, and the endpoint is closed. It must not be
// called from a Receiver or a state-change callback.
func (p *Port) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	for _, t := range []clock.Timer{p.paceTimer, p.keepTimer, p.liveTimer, p.drainTimer, p.retrainTimer} {
		if t != nil {
			t.Stop()
		}
	}
	for vl := range p.tx {
		for p.tx[vl].q.len() > 0 {
			p.toRelease = append(p.toRelease, p.tx[vl].q.pop().pkt)
		}
	}
	p.txCond.Broadcast()
	p.idleCond.Broadcast()
	p.spaceCond.Broadcast()
	p.unlock()
	err := p.ep.Close()
	p.wg.Wait()
	return err
}

// Name returns the endpoint's name.
func (p *Port) Name() string { return p.ep.Name() }

// Config returns the port's configuration, defaults filled in, as New
// got it: SetVLBlocks does not change it (Credits reports each VL's
// buffer). Its VLBlocks is the port's own: do not modify it (senders call
// Config per packet, so it is not copied).
func (p *Port) Config() Config { return p.cfg }

// Rate returns the link's data rate in bits per second, at the width and
// speed it last trained at.
func (p *Port) Rate() uint64 { return p.rate.Load() }

// OperationalVLs returns the number of data VLs in operation.
func (p *Port) OperationalVLs() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.operVLs
}

// SetOperationalVLs sets the number of data VLs in operation (PortInfo
// OperationalVLs): 1, 2, 4, 8 or 15, at most Config.DataVLs. Packets queued
// on VLs that stop operating are dropped (VL mapping).
func (p *Port) SetOperationalVLs(n int) error {
	if !validVLCount(n) || n > p.cfg.DataVLs {
		return fmt.Errorf("%w: %d operational VLs on a port with %d", ErrVL, n, p.cfg.DataVLs)
	}
	p.mu.Lock()
	defer p.unlock()
	if n < p.operVLs {
		p.flushLocked(DropVLMapping, n, MaxDataVLs)
	}
	p.operVLs = n
	p.kickLocked()
	return nil
}

// Send queues pkt for transmission on the VL its LRH names and takes over
// the caller's reference: the port releases it once sent or dropped. A
// packet the port's state does not let through (only VL15 before Active,
// nothing while Down), on a VL that is not operational, or malformed, is
// dropped and counted, and the error says why; so is an orphan (see
// DropOrphans), counted on its input port. With Config.TxQueueLimit, Send
// blocks while the VL's queue is full.
func (p *Port) Send(pkt *Packet) error {
	n, err := wire.PacketLen(pkt.Bytes)
	if err != nil || n > p.maxPkt {
		p.mu.Lock()
		p.dropLocked(DropMalformed, true)
		p.mu.Unlock()
		pkt.Release()
		if err == nil {
			err = fmt.Errorf("%d bytes over the MTU", n)
		}
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	lrh := wire.LRH(pkt.Bytes)
	vl := int(lrh.VL())
	e := txEntry{pkt: pkt, n: n, blocks: Blocks(n), mcast: isMulticastLID(lrh.DLID())}

	p.mu.Lock()
	for {
		var cause DropCause
		switch {
		case p.closed:
			p.mu.Unlock()
			pkt.Release()
			return net.ErrClosed
		case pkt.orphaned():
			// Checked under mu: DropOrphans, which takes mu after the
			// input port went Down, either finds the packet queued or
			// this check sees the Down.
			p.mu.Unlock()
			pkt.dropOrphan()
			return ErrInputDown
		case !p.sendableLocked(vl):
			cause, err = DropNotActive, fmt.Errorf("%w: VL%d in %v", ErrNotActive, vl, p.stateLocked())
		case vl != VL15 && vl >= p.operVLs:
			cause, err = DropVLMapping, fmt.Errorf("%w: VL%d of %d", ErrVL, vl, p.operVLs)
		case p.cfg.TxQueueLimit > 0 && p.tx[vl].q.len() >= p.cfg.TxQueueLimit:
			p.spaceCond.Wait()
			continue
		default:
			p.tx[vl].q.push(e)
			p.congNoteLocked(vl)
			p.sendOrKickLocked()
			p.mu.Unlock()
			return nil
		}
		p.dropPacketLocked(cause, true, pkt.Bytes)
		p.mu.Unlock()
		pkt.Release()
		return err
	}
}

// DropOrphans drops the packets queued here whose input port has gone
// Down since they arrived, and returns how many. Such an orphan sat, in
// silicon, in that port's receive buffer, which a port loses when it goes
// Down; here it would go on holding the port's blocks and waiting for
// this output, a dependency of the routes of before the change that the
// Down was meant to end. Each is counted on its input port as
// DropInputDown, and released, which gives the blocks back. A switch
// calls it on every port when one of its ports goes Down; Send refuses
// orphans that come later.
func (p *Port) DropOrphans() int {
	p.mu.Lock()
	var gone []*Packet
	for vl := range p.tx {
		gone = p.tx[vl].q.removeIf((*Packet).orphaned, gone)
		p.congNoteLocked(vl)
	}
	if len(gone) > 0 {
		// A new head may have the credits the old one lacked.
		p.spaceCond.Broadcast()
		p.kickLocked()
	}
	p.mu.Unlock()
	for _, pkt := range gone {
		pkt.dropOrphan()
	}
	return len(gone)
}

// sendableLocked reports whether the port's state lets a packet on vl out
// (IBA §7.2): SMPs once the link is up (Init, Armed, Active), data only
// when Active.
func (p *Port) sendableLocked(vl int) bool {
	if p.draining {
		return vl == VL15 && p.carrier // the SMA's last answers
	}
	if p.phys != physLinkUp || !p.carrier {
		return false
	}
	if vl == VL15 {
		return p.state >= portInit
	}
	return p.state == portActive
}

// WaitIdle blocks until the transmitter has nothing it can do before
// something changes (it waits for work, for credits or for its pacing
// timer), and returns the number of packets the port has handed to the
// endpoint so far. Tests use it, with pipe.Endpoint.Idle, to let a fabric
// settle before they advance a manual clock.
func (p *Port) WaitIdle() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.closed && (!p.parked || p.wake || p.writing) {
		p.idleCond.Wait()
	}
	return p.written
}
