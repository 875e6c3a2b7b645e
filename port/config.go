package port

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"ibfab/internal/clock"
	"ibfab/wire/mad"
)

// Link-layer constants of the IBA spec (IBA 1.2.1 §7.6, §7.9).
const (
	// BlockSize is the flow-control unit: credits, FCTBS, FCCL and ABR count
	// 64-byte blocks (§7.9.3), and arbitration weights use the same unit
	// (§7.6.9).
	BlockSize = 64
	// MaxCreditAdvance is the most blocks an FCCL may run ahead of the
	// sender's FCTBS: half the 12-bit counter space, which is what lets
	// both ends compare the wrapping counters unambiguously (§7.9.4).
	MaxCreditAdvance = 2048
	// VL15 is the management VL: SMPs only, not flow controlled, always
	// sent first (§7.6.3).
	VL15 = 15
	// MaxDataVLs is the most data VLs a port implements (VL0-VL14).
	MaxDataVLs = 15
	// HighLimitUnit is the number of bytes one unit of LimitOfHighPriority
	// stands for (§7.6.9.1).
	HighLimitUnit = 4096
	// HighLimitUnbounded is the LimitOfHighPriority value that lets the
	// high-priority table send without ever yielding to the low one.
	HighLimitUnbounded = 255

	fcModulus = 4096 // FCTBS, FCCL and ABR are 12-bit counters
	fcMask    = fcModulus - 1
	numVLs    = 16
)

// maxHeaderBytes is what a data packet may carry beyond its MTU-sized
// payload: LRH 8, GRH 40, BTH 12, the largest extended transport headers
// (RDETH+DETH+RETH, or AtomicETH) and ImmDt, ICRC 4 and VCRC 2, rounded up.
const maxHeaderBytes = 128

// Defaults of Config. The keepalive and liveness figures are ibfab's (the
// spec asks for a flow-control packet every 65536 symbol times, which an
// emulated fabric of a hundred processes cannot afford when idle).
const (
	DefaultWidth    = mad.LinkWidth4X
	DefaultSpeed    = mad.LinkSpeedSDR
	DefaultDataVLs  = 8    // VL0-7, what switch and HCA silicon of the QDR generation has
	DefaultRxBlocks = 1024 // 64 KiB per data VL
	// DefaultVL15Packets is the VL15 buffer: silicon forwards an SMP in
	// well under a microsecond, a node process off the CPU for a few
	// milliseconds then reads its socket's backlog faster than it passes
	// the SMPs on; with 8, an SM's window of 16 lost SMPs at its first
	// switch (vl15_overflow), each waiting out a timeout.
	DefaultVL15Packets     = 32
	DefaultMTU             = 4096
	DefaultLivenessTimeout = 200 * time.Millisecond
	DefaultPaceSlack       = 50 * time.Microsecond
	DefaultCatchUp         = 2 * time.Millisecond
	DefaultXmitWaitTick    = time.Microsecond
	// DefaultRetrainDelay is how long a retraining port keeps its
	// transmitter dark: long enough for the kernel and the peer's process
	// to see the carrier go (a few ms on a loaded machine), short against
	// the link training the SM waits for.
	DefaultRetrainDelay = 20 * time.Millisecond
	// DefaultDrainTime is how long a port going dark still sends VL15:
	// the SMA's response to the Set that took it down leaves first.
	DefaultDrainTime = 2 * time.Millisecond
)

// ErrConfig is wrapped by the errors New returns for a bad Config.
var ErrConfig = errors.New("port: bad config")

// Config describes one port. The zero value of every field means its
// default, so Config{} is a 4X SDR port with eight data VLs on the real
// clock.
type Config struct {
	// Width and Speed are the cable's: the widest width and fastest speed
	// the port supports, what it trains at with a peer that enables them
	// too, and so the link's data rate under the speed's coding
	// (mad.DataRate: 8b/10b to QDR, 64b/66b for FDR and EDR, RS-FEC for
	// HDR, NDR, XDR): 4X SDR is 8 Gb/s, 4X NDR 400 Gb/s. The transmitter
	// is paced at width × lane data rate of what the link trained at.
	Width mad.LinkWidth
	Speed mad.LinkSpeed

	// DataVLs is VLCap, the number of data VLs the port implements:
	// 1, 2, 4, 8 or 15. The operational count starts equal to it and the
	// SM may lower it (SetOperationalVLs).
	DataVLs int
	// RxBlocks is the receive buffer of each data VL in 64-byte blocks.
	// It must hold one packet of the MTU; only 2048 blocks of it can ever
	// be advertised at once.
	RxBlocks int
	// VLBlocks sizes the receive buffers VL by VL: VLBlocks[vl] blocks for
	// data VL vl, RxBlocks for the VLs past its end; at most DataVLs
	// entries. 0 leaves the VL without a buffer: it is never credited, so
	// nothing is ever sent to the port on it. A non-zero entry must hold
	// one packet of the MTU. SetVLBlocks changes them at run time.
	VLBlocks []int
	// CreditSlack is how many freed blocks of a data VL the port may hold
	// back before it tells the peer (a flow-control packet): 0 means the
	// default, an update only once the peer's remaining credit has fallen
	// to half the buffer, which spares packets and wake-ups; a small
	// value keeps the peer's view of the buffer (port.Downstream, what
	// adaptive routing reads) close to the truth. SetCreditSlack changes
	// it at run time.
	CreditSlack int
	// VL15Packets is the VL15 receive buffer in packets; SMPs arriving
	// when it is full are dropped and counted (VL15Dropped).
	VL15Packets int
	// MTU is the largest payload in bytes (256, 512, 1024, 2048 or 4096);
	// longer packets are malformed.
	MTU int

	// LivenessTimeout takes the link down when no link packet has come
	// from the peer for this long.
	LivenessTimeout time.Duration
	// KeepaliveInterval is the longest a link goes without a flow-control
	// packet (each data VL's own comes every OperationalVLs intervals);
	// default LivenessTimeout/4.
	KeepaliveInterval time.Duration
	// KeepaliveAnswers makes the port the quiet end of its link: once the
	// link is up it sends no keepalive on a timer of its own but answers
	// the peer's, with a flow-control packet whenever one arrives and the
	// port has sent none for half an interval. Only if the peer falls
	// silent for half the liveness timeout does it ask itself, so two
	// quiet ends still keep their link. An HCA's ports answer: an idle
	// host then wakes once per interval, for its switch's keepalive, not
	// for its own timer as well.
	KeepaliveAnswers bool
	// KeepaliveEpoch, when set, puts the keepalives on a grid: they go at
	// whole multiples of KeepaliveInterval after it (on the port's clock).
	// Ports that share it (a fabric's) send at the same moments, so a
	// switch wakes once for all its ports and its peers' packets arrive
	// while it is awake, instead of a wake-up per port at scattered times.
	KeepaliveEpoch time.Time
	// RetrainDelay is how long the transmitter stays off when the port
	// retrains (SetState Down, SetPhysState Polling on a link that is up).
	RetrainDelay time.Duration
	// DrainTime is how long a port going dark (retraining or Disabled)
	// still sends VL15 before its transmitter goes off.
	DrainTime time.Duration
	// Clock is the time source; nil means clock.Real(). --time-scale comes
	// in as clock.Scaled.
	Clock clock.Clock

	// Unpaced sends as fast as the endpoint takes packets, for measuring
	// the machine's limit.
	Unpaced bool
	// PaceSlack is how far ahead of the link's schedule the transmitter may
	// run before it sleeps: 0 means DefaultPaceSlack, a negative value
	// none (the transmitter sleeps before every packet that is early).
	PaceSlack time.Duration
	// CatchUp is how far behind schedule a backlogged transmitter may fall
	// and still send back to back to make the time up: 0 means
	// DefaultCatchUp, negative none.
	CatchUp time.Duration
	// IgnoreCredits makes the transmitter send data packets whatever the
	// peer's credit limit: a port without flow control, for showing what
	// credits prevent (the peer drops what its buffer cannot hold, as
	// buffer overruns). Never set it in a real fabric.
	IgnoreCredits bool
	// XmitWaitTick is the unit of PortXmitWait.
	XmitWaitTick time.Duration

	// TxQueueLimit bounds each VL's output queue in packets; Send blocks
	// while the queue is full. 0 means unbounded, which is right for a
	// switch, whose input buffers bound what it can queue.
	TxQueueLimit int

	// DropLog, when set, records each data packet the port drops
	// (DropLog: time, cause, LRH), Num naming the port in the records; the
	// ports of one node share one log.
	DropLog *DropLog
	Num     uint8

	// OnStateChange, when set, is called after every change of the
	// physical or logical state, one call at a time, in order, without
	// the port's lock held (it may call the port).
	OnStateChange func(p *Port, from, to State)

	// OnRelease, when set, is called with each packet the port received
	// when its last reference is released (Packet.Release), before the
	// packet goes back to the pool and before its blocks are credited:
	// a switch learns from it that a packet it handed to an output has
	// left. The packet must not be kept or read beyond its pointer (it is
	// recycled right after). It is called without any port's lock held,
	// from whichever goroutine released the packet, and may call ports
	// (Send included) and release other packets.
	OnRelease func(pkt *Packet)
}

// withDefaults returns c with every zero field set to its default, or an
// error for a value the port cannot run with.
func (c Config) withDefaults() (Config, error) {
	c.fillDefaults()
	if err := c.checkRateAndBuffers(); err != nil {
		return c, err
	}
	c.VLBlocks = slices.Clone(c.VLBlocks) // the caller's slice may change
	return c, c.checkLimits()
}

// orDefault sets *v to d when it is zero.
func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// fillDefaults sets every zero field of c to its default; a negative
// PaceSlack or CatchUp means none.
func (c *Config) fillDefaults() {
	orDefault(&c.Width, DefaultWidth)
	orDefault(&c.Speed, DefaultSpeed)
	orDefault(&c.DataVLs, DefaultDataVLs)
	orDefault(&c.RxBlocks, DefaultRxBlocks)
	orDefault(&c.VL15Packets, DefaultVL15Packets)
	orDefault(&c.MTU, DefaultMTU)
	orDefault(&c.LivenessTimeout, DefaultLivenessTimeout)
	orDefault(&c.KeepaliveInterval, c.LivenessTimeout/4)
	if c.Clock == nil {
		c.Clock = clock.Real()
	}
	orDefault(&c.RetrainDelay, DefaultRetrainDelay)
	orDefault(&c.DrainTime, DefaultDrainTime)
	switch {
	case c.PaceSlack == 0:
		c.PaceSlack = DefaultPaceSlack
	case c.PaceSlack < 0:
		c.PaceSlack = 0
	}
	switch {
	case c.CatchUp == 0:
		c.CatchUp = DefaultCatchUp
	case c.CatchUp < 0:
		c.CatchUp = 0
	}
	orDefault(&c.XmitWaitTick, DefaultXmitWaitTick)
}

// checkRateAndBuffers refuses a link rate, data VL count or MTU IBA does
// not have, and receive buffers that cannot hold an MTU packet.
func (c *Config) checkRateAndBuffers() error {
	if _, err := mad.DataRate(c.Width, c.Speed); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if !validVLCount(c.DataVLs) {
		return fmt.Errorf("%w: %d data VLs (want 1, 2, 4, 8 or 15)", ErrConfig, c.DataVLs)
	}
	if _, ok := mad.MTUFromBytes(c.MTU); !ok {
		return fmt.Errorf("%w: MTU %d", ErrConfig, c.MTU)
	}
	if need := Blocks(c.MTU + maxHeaderBytes); c.RxBlocks < need {
		return fmt.Errorf("%w: %d receive blocks per VL cannot hold one %d-byte MTU packet (%d blocks)",
			ErrConfig, c.RxBlocks, c.MTU, need)
	}
	_, err := c.vlCapacities(c.VLBlocks)
	return err
}

// checkLimits refuses negative buffers, times and limits.
func (c *Config) checkLimits() error {
	switch {
	case c.VL15Packets < 0:
		return fmt.Errorf("%w: VL15 buffer of %d packets", ErrConfig, c.VL15Packets)
	case c.RetrainDelay < 0, c.DrainTime < 0:
		return fmt.Errorf("%w: retrain delay %v, drain time %v", ErrConfig, c.RetrainDelay, c.DrainTime)
	case c.LivenessTimeout < 0, c.KeepaliveInterval <= 0:
		return fmt.Errorf("%w: liveness timeout %v, keepalive %v", ErrConfig, c.LivenessTimeout, c.KeepaliveInterval)
	case c.XmitWaitTick < 0:
		return fmt.Errorf("%w: PortXmitWait tick %v", ErrConfig, c.XmitWaitTick)
	case c.CreditSlack < 0:
		return fmt.Errorf("%w: credit slack of %d blocks", ErrConfig, c.CreditSlack)
	case c.TxQueueLimit < 0:
		return fmt.Errorf("%w: transmit queue limit %d", ErrConfig, c.TxQueueLimit)
	}
	return nil
}

// CheckVLBlocks returns the error New, or SetVLBlocks on a port built
// from c, would give for the per-VL receive buffers blocks, or nil: for a
// node that sizes the buffers of ports it has not built yet.
func (c Config) CheckVLBlocks(blocks []int) error {
	c, err := c.withDefaults()
	if err != nil {
		return err
	}
	_, err = c.vlCapacities(blocks)
	return err
}

// vlCapacities returns the receive buffer of every data VL under the
// per-VL sizes blocks (VLBlocks' meaning), or an error wrapping ErrConfig
// for a size the port cannot run with.
func (c *Config) vlCapacities(blocks []int) ([MaxDataVLs]int, error) {
	var caps [MaxDataVLs]int
	if len(blocks) > c.DataVLs {
		return caps, fmt.Errorf("%w: receive buffers for %d VLs on a port with %d data VLs", ErrConfig, len(blocks), c.DataVLs)
	}
	need := Blocks(c.MTU + maxHeaderBytes)
	for vl := range caps {
		caps[vl] = c.RxBlocks
		if vl >= len(blocks) {
			continue
		}
		switch b := blocks[vl]; {
		case b < 0:
			return caps, fmt.Errorf("%w: VL%d receive buffer of %d blocks", ErrConfig, vl, b)
		case b > 0 && b < need:
			return caps, fmt.Errorf("%w: VL%d's %d receive blocks cannot hold one %d-byte MTU packet (%d blocks)",
				ErrConfig, vl, b, c.MTU, need)
		default:
			caps[vl] = b
		}
	}
	return caps, nil
}

// validVLCount reports whether n data VLs is a count IBA allows (§7.6.1).
func validVLCount(n int) bool {
	switch n {
	case 1, 2, 4, 8, 15:
		return true
	}
	return false
}

// CableRate returns the config's width and speed, the defaults for zero
// ones: what the port's silicon runs at.
func (c Config) CableRate() (mad.LinkWidth, mad.LinkSpeed) {
	orDefault(&c.Width, DefaultWidth)
	orDefault(&c.Speed, DefaultSpeed)
	return c.Width, c.Speed
}

// Rate is a port's cable width and speed (Config.Width and Speed).
type Rate struct {
	Width mad.LinkWidth
	Speed mad.LinkSpeed
}

// WithRate returns c with its width and speed set from r's non-zero ones.
func (c Config) WithRate(r Rate) Config {
	if r.Width != 0 {
		c.Width = r.Width
	}
	if r.Speed != 0 {
		c.Speed = r.Speed
	}
	return c
}
