package agent

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"ibfab/internal/clock"
	"ibfab/wire/mad"
)

// Defaults New fills in for zero Config fields.
const (
	DefaultLinearFDBCap    = mad.MulticastLIDBase // every unicast LID: 0x0000-0xbfff
	DefaultMulticastFDBCap = 1024
	DefaultPartitionCap    = 64
	DefaultVLCap           = 4 // VL0-7
	DefaultMTUCap          = mad.MTU4096
	DefaultVLArbCap        = mad.VLArbMaxEntries
	DefaultGUIDCap         = mad.GUIDsPerBlock
	DefaultRespTimeValue   = 8 // 4.096 µs × 2^8 ≈ 1 ms, the spec's default
	// The widths and speeds of a 4X SDR port, the fabric's default rate
	// (a port's data plane reports its own through PortControl; these are
	// for the ports it does not, a switch's port 0).
	DefaultWidthSupported = mad.LinkWidth1X | mad.LinkWidth4X
	DefaultSpeedSupported = mad.LinkSpeedSDR
)

// DefaultPartitionEnforcementCap is the P_Key table size of a switch's
// external ports the soft switch advertises (SwitchInfo.
// PartitionEnforcementCap): ibsim's, so that both fabrics look alike to
// OpenSM, which fills these tables only when the size is not 0.
const DefaultPartitionEnforcementCap = 64

// Config describes the node an Agent serves and the seams it works
// through. Zero numeric fields take the Default values.
type Config struct {
	Type            mad.NodeType // mad.NodeTypeCA or mad.NodeTypeSwitch
	NumPorts        uint8        // physical ports, 1..254
	NodeGUID        uint64
	SystemImageGUID uint64 // 0: NodeGUID
	// PortGUIDs[i] is the GUID of CA port i+1; nil gives NodeGUID+port,
	// ibsim's rule. A switch has one port GUID, port 0's: NodeGUID.
	PortGUIDs   []uint64
	Description string
	VendorID    uint32 // 24 bits
	DeviceID    uint16
	Revision    uint32

	// PartitionCap is the P_Key table size of a CA port and of switch
	// port 0; PartitionEnforcementCap that of a switch's external ports
	// (0 there means "no table": external ports do not enforce).
	PartitionCap            uint16
	PartitionEnforcementCap uint16
	LinearFDBCap            uint16 // switch: LFT entries
	MulticastFDBCap         uint16 // switch: MFT entries from 0xc000
	EnhancedPort0           bool
	VLCap                   uint8 // VL-count code, 1..5
	MTUCap                  mad.MTU
	VLArbHighCap            uint8 // high-priority arbitration entries, 0..64
	VLArbLowCap             uint8
	GUIDCap                 uint8 // GUIDInfo entries per port
	RespTimeValue           uint8
	// WidthSupported and SpeedSupported are the node's silicon: the
	// widths and speeds (every generation, mad.LinkSpeed) its ports
	// support, what PortInfo reads when the data plane keeps none and
	// what the CapabilityMask rate bits of a CA port and of a switch's
	// port 0 say.
	WidthSupported mad.LinkWidth
	SpeedSupported mad.LinkSpeed
	// ARGroupCap is the groups of alternative ports a switch's adaptive
	// routing holds (ARInfo.GroupCap, ar.go), group 0 included.
	ARGroupCap uint16

	Ports    PortControl // required
	Counters Counters    // nil: the PMA reports zeros
	Clock    clock.Clock // nil: the wall clock
	Sender   Sender      // nil: traps are counted as dropped

	// LocalGMP says the node has a MAD client (an HCA's attach point, where
	// diagnostics such as saquery and perfquery run) that takes the GMPs
	// the agent does not serve itself: responses of every class, matched
	// to their requester by TID, and requests of classes other than
	// PerfMgt. Without it those go to the SM when one is attached; else
	// requests are answered with a bad-version status and responses are
	// dropped as unexpected.
	LocalGMP bool
}

// Agent is the SMA and PMA of one node: it answers the MADs addressed to
// the node, forwards directed-route SMPs through it, raises traps, and
// holds the device state the data plane reads (see the accessors in
// tables.go). All methods are safe for concurrent use.
type Agent struct {
	cfg    Config // its seams (Ports, Counters, Clock, Sender) too
	stats  stats
	tables tables // lock-free reads; written with mu held
	// ccGen counts the Sets that may change a switch port's marking
	// (CCMarkingGeneration): read per packet, without mu.
	ccGen atomic.Uint64
	// arTable is the adaptive routing configuration (ar_api.go).
	arTable atomic.Pointer[ARTable]

	// mu protects everything below it.
	mu   sync.Mutex
	port []portState // indexed by port number; a CA's port 0 is unused
	sw   switchState
	trap trapState
	// cc and ar are made at first use (ccInitLocked, arInitLocked): most
	// agents of a fabric never see a CC or AR MAD, and inline they were
	// 344 of an Agent's 1,048 bytes.
	cc *ccState
	ar *arState
	// The PMA's attribute table, found once by New: it depends only on the
	// node type and its counters (the CC agent's, only on the type, is
	// ccAttrs').
	pmaDispatch map[mad.AttrID]pmaServe
	tidSeq      uint32
	closed      bool
}

// portState is the SMA's record of one port.
type portState struct {
	info mad.PortInfoFields // SM-set and static fields; live ones come from PortControl
	last mad.PortState      // state at the last PortStateChanged, for the PortStateChange bit
	// mgmt is what only a management port (a CA port, a switch's port 0)
	// has, made at first use (mgmtState): an alias GUID set, an M_Key
	// violation. Inline it was 190 of the 280 bytes of every port.
	mgmt *mgmtPort
}

// mgmtState returns the management state of the port, making it; mu
// held.
func (p *portState) mgmtState() *mgmtPort {
	if p.mgmt == nil {
		p.mgmt = &mgmtPort{}
	}
	return p.mgmt
}

// mgmtPort is the state of a port that holds an SMA.
type mgmtPort struct {
	// guids is GUIDInfo's alias GUIDs, nil until the SM sets one; entry 0
	// is the port GUID (see guidInfoLocked).
	guids []uint64
	lease leaseState    // M_Key lease
	mtrap mkeyTrapState // Trap 256, Bad M_Key
}

// switchState holds the settable SwitchInfo fields.
type switchState struct {
	info            mad.SwitchInfoFields
	portStateChange bool
}

// Errors New returns.
var (
	ErrConfig = errors.New("agent: invalid config")
)

// New returns the agent of the node cfg describes, in the state of a
// device after reset: no LIDs, empty forwarding tables, default P_Key at
// index 0, all SLs on VL0.
func New(cfg Config) (*Agent, error) {
	if err := normalize(&cfg); err != nil {
		return nil, err
	}
	a := &Agent{
		cfg:    cfg,
		port:   make([]portState, int(cfg.NumPorts)+1),
		tidSeq: uint32(cfg.NodeGUID), // different nodes start their TIDs apart
	}
	for i := range a.port {
		a.initPort(uint8(i))
	}
	a.sw.info = mad.SwitchInfoFields{
		LinearFDBCap:                      cfg.LinearFDBCap,
		MulticastFDBCap:                   cfg.MulticastFDBCap,
		LifeTimeValue:                     DefaultLifeTimeValue,
		OptimizedSLtoVLMappingProgramming: 1, // AI/AO in SLtoVL modifiers are honoured
		LIDsPerPort:                       1,
		PartitionEnforcementCap:           cfg.PartitionEnforcementCap,
		InboundEnforcementCap:             cfg.PartitionEnforcementCap > 0,
		OutboundEnforcementCap:            cfg.PartitionEnforcementCap > 0,
		EnhancedPort0:                     cfg.EnhancedPort0,
		DefaultPort:                       0,
		DefaultMulticastPrimaryPort:       mad.LFTNoPort,
		DefaultMulticastNotPrimaryPort:    mad.LFTNoPort,
	}
	a.tables.init(a)
	a.pmaDispatch = a.pmaAttrs()
	return a, nil
}

// DefaultLifeTimeValue is SwitchInfo.LifeTimeValue after reset: 4.096 µs ×
// 2^18 ≈ 1 s, the head-of-queue lifetime OpenSM also programs by default.
const DefaultLifeTimeValue = 18

func normalize(c *Config) error {
	switch c.Type {
	case mad.NodeTypeCA, mad.NodeTypeSwitch:
	default:
		return fmt.Errorf("%w: node type %v", ErrConfig, c.Type)
	}
	if c.NumPorts == 0 || c.NumPorts > 254 {
		return fmt.Errorf("%w: %d ports", ErrConfig, c.NumPorts)
	}
	if c.NodeGUID == 0 {
		return fmt.Errorf("%w: zero node GUID", ErrConfig)
	}
	if c.Ports == nil {
		return fmt.Errorf("%w: no PortControl", ErrConfig)
	}
	if c.PortGUIDs != nil && len(c.PortGUIDs) != int(c.NumPorts) {
		return fmt.Errorf("%w: %d port GUIDs for %d ports", ErrConfig, len(c.PortGUIDs), c.NumPorts)
	}
	setDefault(&c.SystemImageGUID, c.NodeGUID)
	setDefault(&c.PartitionCap, DefaultPartitionCap)
	setDefault(&c.LinearFDBCap, DefaultLinearFDBCap)
	setDefault(&c.MulticastFDBCap, DefaultMulticastFDBCap)
	setDefault(&c.VLCap, DefaultVLCap)
	setDefault(&c.MTUCap, DefaultMTUCap)
	setDefault(&c.VLArbHighCap, DefaultVLArbCap)
	setDefault(&c.VLArbLowCap, DefaultVLArbCap)
	setDefault(&c.GUIDCap, DefaultGUIDCap)
	setDefault(&c.RespTimeValue, DefaultRespTimeValue)
	setDefault(&c.WidthSupported, DefaultWidthSupported)
	setDefault(&c.SpeedSupported, DefaultSpeedSupported)
	setDefault(&c.ARGroupCap, DefaultARGroupCap)
	switch {
	case c.LinearFDBCap > DefaultLinearFDBCap:
		return fmt.Errorf("%w: LinearFDBCap %d beyond the unicast LIDs", ErrConfig, c.LinearFDBCap)
	case c.MulticastFDBCap > 0xffff-mad.MulticastLIDBase:
		return fmt.Errorf("%w: MulticastFDBCap %d", ErrConfig, c.MulticastFDBCap)
	case mad.NumDataVLs(c.VLCap) == 0:
		return fmt.Errorf("%w: VLCap %d", ErrConfig, c.VLCap)
	case c.MTUCap.Bytes() == 0:
		return fmt.Errorf("%w: MTUCap %d", ErrConfig, c.MTUCap)
	case c.VLArbHighCap > mad.VLArbMaxEntries || c.VLArbLowCap > mad.VLArbMaxEntries:
		return fmt.Errorf("%w: VL arbitration caps %d/%d", ErrConfig, c.VLArbHighCap, c.VLArbLowCap)
	case c.RespTimeValue > 31:
		return fmt.Errorf("%w: RespTimeValue %d", ErrConfig, c.RespTimeValue)
	}
	if c.Clock == nil {
		c.Clock = clock.Real()
	}
	return nil
}

func setDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// isSwitch reports whether the agent serves a switch.
func (a *Agent) isSwitch() bool { return a.cfg.Type == mad.NodeTypeSwitch }

// smaPort returns the port whose PortInfo holds the SMA's LID and M_Key
// for a MAD that arrived on port: port 0 on a switch, the port itself on a
// CA.
func (a *Agent) smaPort(port uint8) uint8 {
	if a.isSwitch() {
		return 0
	}
	return port
}

// portGUID returns the GUID of port.
func (a *Agent) portGUID(port uint8) uint64 {
	switch {
	case a.isSwitch() || port == 0:
		return a.cfg.NodeGUID
	case a.cfg.PortGUIDs != nil:
		return a.cfg.PortGUIDs[port-1]
	}
	return a.cfg.NodeGUID + uint64(port)
}

// validPort reports whether port exists: 0..NumPorts on a switch,
// 1..NumPorts on a CA.
func (a *Agent) validPort(port uint8) bool {
	if port == 0 {
		return a.isSwitch()
	}
	return port <= a.cfg.NumPorts
}

// initPort sets port n's PortInfo after reset. Every VL the port has is
// operational from the start: OpenSM masks its QoS tables with the
// OperationalVLs its discovery read, and VL-hungry routing engines count
// their VLs from it, before its link manager sets it, so a port that came
// up on VL0 would cost a second sweep and a fallback engine (ibsim too
// starts at VLCap).
func (a *Agent) initPort(n uint8) {
	p := &a.port[n]
	c := &a.cfg
	p.info = mad.PortInfoFields{
		GIDPrefix:          defaultGIDPrefix,
		LinkWidthEnabled:   c.WidthSupported,
		LinkWidthSupported: c.WidthSupported,
		LinkSpeedSupported: c.SpeedSupported.Legacy(),
		LinkSpeedEnabled:   c.SpeedSupported.Legacy(),
		// Extended speeds of the silicon, all enabled after reset (the
		// live ones come from the data plane: setLinkRate).
		LinkSpeedExtSupported:  c.SpeedSupported.Ext(),
		LinkSpeedExtEnabled:    c.SpeedSupported.Ext(),
		LinkSpeedExtSupported2: c.SpeedSupported.Ext2(),
		LinkSpeedExtEnabled2:   c.SpeedSupported.Ext2(),
		LinkDownDefaultState:   mad.PhysStatePolling,
		NeighborMTU:            c.MTUCap,
		VLCap:                  c.VLCap,
		VLArbitrationHighCap:   c.VLArbHighCap,
		VLArbitrationLowCap:    c.VLArbLowCap,
		MTUCap:                 c.MTUCap,
		OperationalVLs:         c.VLCap, // every VL the port has: see above
		GUIDCap:                c.GUIDCap,
		RespTimeValue:          c.RespTimeValue,
		VLStallCount:           7,
		HOQLife:                DefaultLifeTimeValue,
	}
	if a.isSwitch() {
		p.info.GUIDCap = 0
		if n == 0 {
			p.info.CapabilityMask = switchPort0Caps
			p.info.GUIDCap = c.GUIDCap
			p.info.LinkWidthActive = mad.LinkWidth4X
			p.info.LinkSpeedActive = mad.LinkSpeedSDR
			if !c.EnhancedPort0 {
				p.info.VLArbitrationHighCap, p.info.VLArbitrationLowCap = 0, 0
			}
		}
	} else if n > 0 {
		p.info.CapabilityMask = caPortCaps
	}
	if !a.isSwitch() || n == 0 {
		// The speeds the node's silicon has: OpenSM and libibnetdisc read
		// a switch's from port 0.
		p.info.CapabilityMask, p.info.CapabilityMask2 = mad.WithRateCapabilities(
			p.info.CapabilityMask, p.info.CapabilityMask2, c.WidthSupported, c.SpeedSupported)
	}
	p.last = mad.PortStateDown
}

// defaultGIDPrefix is the link-local subnet prefix, GIDPrefix after reset.
const defaultGIDPrefix = 0xfe80_0000_0000_0000

// Capability masks the agent advertises: what it implements.
const (
	// Not IsClientReregistrationSupported: the port's clients (the attach
	// point's, through libumad2sim) have no way to hear of a reregister
	// request, so the port would promise what nobody does.
	caPortCaps = mad.PortCapIsTrapSupported | mad.PortCapIsSLMappingSupported |
		mad.PortCapIsSystemImageGUIDSupported
	switchPort0Caps = mad.PortCapIsTrapSupported | mad.PortCapIsNoticeSupported |
		mad.PortCapIsSLMappingSupported | mad.PortCapIsSystemImageGUIDSupported
)

// SetIsSM sets or clears the IsSM capability of port (a CA port, or a
// switch's port 0): whether an SM is attached there. SMInfo requests to a
// port with IsSM go to that SM (as Local Outbounds); without it the agent
// answers them as unsupported.
func (a *Agent) SetIsSM(port uint8, on bool) error {
	if !a.validPort(port) || (a.isSwitch() && port != 0) {
		return fmt.Errorf("agent: no management port %d", port)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if on {
		a.port[port].info.CapabilityMask |= mad.PortCapIsSM
	} else {
		a.port[port].info.CapabilityMask &^= mad.PortCapIsSM
	}
	return nil
}

// hasSM reports whether an SM is attached at the SMA of port; mu held.
func (a *Agent) hasSM(port uint8) bool {
	return a.port[a.smaPort(port)].info.CapabilityMask&mad.PortCapIsSM != 0
}

// Close stops the agent's timers (trap repeats, M_Key leases). After Close
// the agent still answers MADs but raises no more traps.
func (a *Agent) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	a.trap.stop()
	for i := range a.port {
		if m := a.port[i].mgmt; m != nil {
			m.lease.stop()
			m.mtrap.stop()
		}
	}
}

// NodeGUID returns the node GUID the agent answers with.
func (a *Agent) NodeGUID() uint64 { return a.cfg.NodeGUID }

// NumPorts returns the number of physical ports.
func (a *Agent) NumPorts() uint8 { return a.cfg.NumPorts }

// Type returns the node type.
func (a *Agent) Type() mad.NodeType { return a.cfg.Type }

// PortGUID returns the GUID of port (a switch's is its node GUID, on port
// 0), for a node's status; 0 for a port that does not exist.
func (a *Agent) PortGUID(port uint8) uint64 {
	if !a.validPort(port) {
		return 0
	}
	return a.portGUID(port)
}

// CapabilityMask returns PortInfo:CapabilityMask of the SMA reached
// through port, as a node's status and its sysfs tree show it, without
// the local Get that would count as a MAD received.
func (a *Agent) CapabilityMask(port uint8) uint32 {
	if !a.validPort(port) {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.port[a.smaPort(port)].info.CapabilityMask
}
