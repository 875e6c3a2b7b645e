package sm

import (
	"errors"
	"fmt"
	"time"

	"ibfab/internal/clock"
	"ibfab/sm/routing"
	"ibfab/sm/txn"
	"ibfab/wire/mad"
)

// Defaults New fills in for zero Config fields.
const (
	DefaultWindow       = txn.DefaultWindow
	DefaultTimeout      = txn.DefaultTimeout
	DefaultProbeTimeout = txn.DefaultProbeTimeout
	DefaultRetries      = txn.DefaultRetries
	// DefaultRetrainTimeout bounds the wait for links set Down to train
	// again: silicon takes milliseconds, the soft fabric 20 ms of emulated
	// time plus 2 ms of drain, times its time scale (11 s at 500).
	DefaultRetrainTimeout = 30 * time.Second
	DefaultRouting        = "updn-pira"
	DefaultSweepInterval  = 10 * time.Second
	// DefaultOpVLs bounds OperationalVLs at VL0-VL14, the most the spec
	// has, so that a port runs every VL both ends of its link support
	// (the smaller VLCap), as OpenSM does with its max_op_vls default
	// (osm_physp_calc_link_op_vls): a smaller Config.OpVLs bounds it.
	DefaultOpVLs         = MaxOpVLs
	DefaultSubnetTimeOut = 18 // 4.096 µs × 2^18 ≈ 1 s
	DefaultPriority      = 0
	// DefaultSMKey is ibsm's SM_Key unless told otherwise, OpenSM's
	// default (its sm_key option): two SMs cooperate only when their keys
	// match. Config.SMKey itself takes 0 as a key.
	DefaultSMKey = 1
	// DefaultPollInterval and DefaultPollRetries are how a standby SM
	// watches the master: OpenSM's sminfo_polling_timeout (10000 ms) and
	// polling_retry_number (4).
	DefaultPollInterval = 10 * time.Second
	DefaultPollRetries  = 4
	DefaultVLArbWeight  = 64 // 64 × 64 bytes per low-priority turn
	// DefaultVLTables leaves SLtoVL and VL arbitration as the devices
	// hold them, as OpenSM does with QoS off; QoS sets them.
	DefaultVLTables = VLTablesKeep
)

// MaxOpVLs is the largest OperationalVLs code: VL0-VL14.
const MaxOpVLs = 5

// Config is an SM's configuration. Zero fields take the defaults.
//
// Its fields come in groups, one embedded struct per concern, so that
// cfg.Window and the like read as before; a composite literal names the
// group: Config{TxnConfig: TxnConfig{Window: 4}}. The managers' own
// configurations (QoS, CC, AR, Partitions) are pointers: nil turns the
// manager off.
type Config struct {
	TxnConfig
	MKeyConfig
	LIDConfig
	RoutingConfig
	PortConfig

	// QoS turns the QoS manager on (package sm/qosmgr): it then owns SLtoVL and
	// VL arbitration, whatever VLTables says.
	QoS *QoSConfig

	// CC turns the congestion control manager on (package sm/ccmgr).
	CC *CCConfig

	// AR turns the adaptive routing manager on (package sm/armgr),
	// whatever its mode: it then owns the switches' adaptive routing, and
	// SLtoVL and VL arbitration are set (SL s on VL s, equal weights)
	// whatever VLTables says.
	AR *ARConfig

	// Partitions turns the partition manager on (package sm/partmgr): P_Key
	// tables from a partitions.conf, and partition enforcement at the
	// switch ports cabled to CAs.
	Partitions *PartitionConfig

	ElectionConfig
	TimingConfig
	AssimilationConfig
}

// MKeyConfig is the M_Key manager's (mkey.go): MKey is the key the SM
// gives every management port (0: none), or with MKeyPerPort the base of
// a key per port (PerPortMKey); MKeyProtect the M_KeyProtectBits (0-3)
// and MKeyLease the M_KeyLeasePeriod in seconds (0: the lease never runs
// out) it sets with it. OnMKeyEvent, when set, hears of ports found
// protected, keys recovered and Trap 256, on the SM's goroutine.
type MKeyConfig struct {
	MKey        uint64
	MKeyProtect uint8
	MKeyLease   uint16
	MKeyPerPort bool
	OnMKeyEvent func(MKeyEvent)
}

// LIDConfig is how LIDs are assigned (the LID cache, package sm/cache)
// and kept.
type LIDConfig struct {
	// LMC gives CA ports 2^LMC LIDs (switches get one) and turns
	// multipath routing on (multipath.go): alias i of a port gets a route
	// of its own in VL layer i mod the data VLs, and the SM then sets
	// SLtoVL (SL s to VL s mod the layers) and VL arbitration whatever
	// VLTables says.
	LMC uint8

	LIDFile string // GUID→LID file read at New and written after each sweep ("" none)
}

// RoutingConfig is the routing engine's, and the rule a route set must
// pass.
type RoutingConfig struct {
	Routing string          // engine name; see routing.Engines
	Options routing.Options // engine options
	// AllowCreditLoops lets an engine that does not promise deadlock
	// freedom (minhop) distribute a route set whose channel dependency
	// graph has a cycle; the sweep still reports it.
	AllowCreditLoops bool
}

// PortConfig is what the SM sets in every port (configure.go).
type PortConfig struct {
	// OpVLs bounds the OperationalVLs code of every port, which is the
	// smaller VLCap of the link's two ends; 0 takes DefaultOpVLs (no
	// bound beyond the ports').
	OpVLs         uint8
	SubnetTimeOut uint8 // PortInfo.SubnetTimeOut of every port
	// LinkSpeedExt is the LinkSpeedExtEnabled the SM sets, with
	// SMSupportsExtendedSpeeds (bit 31 of the modifier), in both ports of
	// every link whose two ends have extended speeds, as OpenSM's
	// force_link_speed_ext: 0 leaves them as they are, 1 to 15 enables
	// those of FDR, EDR, HDR and NDR, 30 none, 31 every one the port
	// supports (sent when Enabled differs from Supported). As on silicon
	// it takes effect at the link's next training.
	LinkSpeedExt mad.LinkSpeedExt
	VLArbWeight  uint8 // weight of each data VL in the low-priority table
	VLTables     VLTables
}

// ElectionConfig is the SM's part in the election and failover
// (sminfo.go, standby.go).
type ElectionConfig struct {
	Priority uint8 // 0..15; higher wins the election
	// SMKey is SMInfo.SM_Key: this SM's SMInfo Sets carry it, another
	// SM's Set without it changes nothing, and another SM whose SMInfo
	// shows a different key takes no part in the election (unless this
	// key is 0, which trusts every SM, as OpenSM does). A requester that
	// fails the M_Key check of the SM's port sees it as 0. 0 is a key
	// like any other here; ibsm's --sm-key defaults to DefaultSMKey.
	SMKey uint64
	// PollInterval is how often a standby SM asks the master for its
	// SMInfo; PollRetries how many polls in a row may go unanswered: when
	// the PollRetries+1-th times out it takes over (OpenSM's
	// sminfo_polling_timeout and polling_retry_number; -1 for none).
	// PollingBound bounds the time that takes.
	PollInterval time.Duration
	PollRetries  int
	// OnSMEvent, when set, hears of every change of the SM's state and
	// every SMInfo exchange with another SM (SMEvent). It runs on the
	// SM's goroutine.
	OnSMEvent func(SMEvent)
}

// TimingConfig is the SM's clock and the period of its light sweeps.
type TimingConfig struct {
	// Clock schedules timeouts and the sweep interval; nil means the
	// port's own clock when it has one (see ClockPort), else the wall
	// clock. Phase times are always wall-clock time.
	Clock clock.Clock

	// SweepInterval is the period of the light sweeps Run makes, and of
	// sweeps for changes when SweepFactor is 0.
	SweepInterval time.Duration
}

// AssimilationConfig is how changes are detected and assimilated
// (assimilate.go).
type AssimilationConfig struct {
	// Detect is how Run learns of changes.
	Detect Detect
	// SweepFactor F, when positive, makes the time between the starts of
	// two sweeps F times the last sweep's duration (thesis 5.2: F = 1
	// sweeps back to back), at least MinSweepPeriod; 0 uses
	// SweepInterval.
	SweepFactor float64
	// Discovery is how a change is discovered; unset is
	// DiscoveryPartial.
	Discovery Discovery
	// Distribution is how new tables reach the switches; unset is
	// DistCutDeps.
	Distribution Distribution
	// RetrainTimeout bounds the wait for the links a distribution set
	// Down to come back in Init (deactivate.go); past it the assimilation
	// fails, for a full sweep.
	RetrainTimeout time.Duration
	// PreBlock, with DistCutDeps, has every sweep that brings the subnet
	// up block the forbidden turns of its own graph's cut nodes, in a
	// last phase (PhaseProtection), once the subnet is up: no route takes
	// them, and a change then blocks only the turns its new graph adds,
	// instead of every cut node's on the first change (thousands of
	// SLtoVL Sets on a fat tree, whose leaves all are cut nodes).
	PreBlock bool
	// Provisional distributes PIRa's routes first, then FERa's on the
	// same up*/down* graph (thesis 6.3); Routing is then not used for
	// assimilations.
	Provisional bool
	// LIDActivation sends the activation SMPs LID-routed, the tables
	// being in place by then (thesis 7.4.1).
	LIDActivation bool
	// OnTables, when set, hears of every forwarding state an
	// assimilation's distribution goes through (see TableState). It runs
	// on the SM's goroutine; the state is valid during the call only.
	OnTables func(*TableState)
}

// normalize fills in the defaults of c's zero fields and checks it.
func (c *Config) normalize() error {
	c.setDefaults()
	return c.check()
}

// setDefaults gives each zero field its default; Burst, Retries and
// PollRetries also take -1 for none.
func (c *Config) setDefaults() {
	c.TxnConfig.SetDefaults()
	orDefault(&c.RetrainTimeout, DefaultRetrainTimeout)
	orDefault(&c.Routing, DefaultRouting)
	orDefault(&c.PollInterval, DefaultPollInterval)
	switch {
	case c.PollRetries == 0:
		c.PollRetries = DefaultPollRetries
	case c.PollRetries < 0:
		c.PollRetries = 0
	}
	if c.QoS != nil {
		c.VLTables = VLTablesSet
	}
	if c.AR != nil {
		// A copy: the caller's configuration stays as given.
		ar := *c.AR
		orDefault(&ar.Threshold, DefaultARThreshold)
		c.AR = &ar
		// The static queuing schemes pick the VL by the SL, and the AFC
		// is one VL among the others in the arbitration.
		c.VLTables = VLTablesSet
	}
	if c.LMC > 0 {
		// Multipath's aliases travel on VL layers: SLtoVL must map SL i
		// to VL i and every VL must be arbitrated.
		c.VLTables = VLTablesSet
	}
	orDefault(&c.OpVLs, DefaultOpVLs)
	orDefault(&c.SubnetTimeOut, DefaultSubnetTimeOut)
	orDefault(&c.VLArbWeight, DefaultVLArbWeight)
	orDefault(&c.SweepInterval, DefaultSweepInterval)
	orDefault(&c.Discovery, DiscoveryPartial)
	orDefault(&c.Distribution, DistCutDeps)
}

// orDefault sets *v to d when it is zero.
func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// check returns an ErrConfig for the first field out of its range.
func (c *Config) check() error {
	switch {
	case c.Window < 1:
		return fmt.Errorf("%w: window %d", ErrConfig, c.Window)
	case c.Timeout < 0:
		return fmt.Errorf("%w: timeout %v", ErrConfig, c.Timeout)
	case c.ProbeTimeout < 0:
		return fmt.Errorf("%w: probe timeout %v", ErrConfig, c.ProbeTimeout)
	case c.RetrainTimeout < 0:
		return fmt.Errorf("%w: retrain timeout %v", ErrConfig, c.RetrainTimeout)
	case c.LMC > 7:
		return fmt.Errorf("%w: LMC %d, want 0 to 7", ErrConfig, c.LMC)
	case mad.NumDataVLs(c.OpVLs) == 0:
		return fmt.Errorf("%w: OperationalVLs code %d, want 1 to 5", ErrConfig, c.OpVLs)
	case c.SubnetTimeOut > 31:
		return fmt.Errorf("%w: SubnetTimeOut %d, want 0 to 31", ErrConfig, c.SubnetTimeOut)
	case c.LinkSpeedExt > 15 && c.LinkSpeedExt < mad.LinkSpeedExtDisabled || c.LinkSpeedExt > mad.LinkSpeedExtSetToSupported:
		return fmt.Errorf("%w: LinkSpeedExtEnabled %d, want 0 to 15, 30 or 31", ErrConfig, c.LinkSpeedExt)
	case c.MKeyProtect > MaxMKeyProtect:
		return fmt.Errorf("%w: M_Key protection level %d, want 0 to %d", ErrConfig, c.MKeyProtect, MaxMKeyProtect)
	case c.MKey == 0 && (c.MKeyProtect != 0 || c.MKeyLease != 0 || c.MKeyPerPort):
		return fmt.Errorf("%w: M_Key protection, lease or per-port keys without an M_Key", ErrConfig)
	case c.Priority > 15:
		return fmt.Errorf("%w: priority %d, want 0 to 15", ErrConfig, c.Priority)
	case c.SweepInterval < 0:
		return fmt.Errorf("%w: sweep interval %v", ErrConfig, c.SweepInterval)
	case c.PollInterval < 0:
		return fmt.Errorf("%w: polling interval %v", ErrConfig, c.PollInterval)
	case c.SweepFactor < 0 || c.SweepFactor != c.SweepFactor:
		return fmt.Errorf("%w: sweep factor %v", ErrConfig, c.SweepFactor)
	}
	if err := errors.Join(detects.Check(c.Detect), discoveries.Check(c.Discovery),
		distributions.Check(c.Distribution), vlTables.Check(c.VLTables)); err != nil {
		return err
	}
	if c.AR != nil {
		if err := checkAR(c.AR, mad.NumDataVLs(c.OpVLs)); err != nil {
			return err
		}
	}
	if _, err := routing.NewEngine(c.Routing, c.Options); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// PollingBound is the longest a standby SM polling every interval, with
// retries polls allowed to go unanswered, takes to see the master gone,
// as OpenSM counts (osm_sm_state_mgr.c): the master may die just after
// answering a poll, then retries+1 polls go unanswered, and OpenSM gives
// up at the poll after them. ibsm gives up when the last of those times
// out, a poll's Config.Timeout after it went: within this bound as long as
// that timeout is shorter than interval.
func PollingBound(interval time.Duration, retries int) time.Duration {
	return time.Duration(retries+2) * interval
}
