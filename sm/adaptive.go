package sm

import (
	"context"
	"errors"
	"fmt"

	"ibfab/sm/armgr"
	"ibfab/sm/txn"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// The adaptive routing manager lives in package sm/armgr; these are its
// types and values under the names sm's callers (cmd/ibsm, the harness)
// know.
type (
	ARConfig  = armgr.Config
	ARResult  = armgr.Result
	AREvent   = armgr.Event
	ARAction  = armgr.Action
	ARSetting = armgr.Setting
	ARReply   = armgr.Reply
)

// AR actions, DefaultARThreshold and AFCVLHighest: see package armgr.
const (
	ARActionSet        = armgr.ActionSet
	ARActionPending    = armgr.ActionPending
	ARActionReject     = armgr.ActionReject
	ARActionError      = armgr.ActionError
	DefaultARThreshold = armgr.DefaultARThreshold
	AFCVLHighest       = armgr.AFCVLHighest
)

// PhaseAR is the phase that programs adaptive routing.
const PhaseAR = "ar"

// AdaptiveRoutingManager is the adaptive routing manager as the SM drives
// it (armgr.Manager), always from the SM's goroutine: after a sweep
// brought the subnet up, and for a control call.
type AdaptiveRoutingManager interface {
	// Program brings every switch of v to the configuration.
	Program(ctx context.Context, v *armgr.View) (*ARResult, []string, error)
	// Apply takes a control call's setting, checked against dataVLs;
	// with v (the subnet up) it programs the switches at once.
	Apply(ctx context.Context, set *ARSetting, dataVLs int, v *armgr.View) (*AREvent, error)
	// Reply is a control call's answer.
	Reply(installed bool, ev *AREvent) ARReply
	// Forget drops what the manager knows of the switches.
	Forget()
}

var (
	_ AdaptiveRoutingManager = (*armgr.Manager)(nil)
	_ armgr.Sender           = (*txn.Layer)(nil)
)

// arState is the manager and the control calls of other goroutines that
// wait for the SM's.
type arState struct {
	AdaptiveRoutingManager
	inbox chan arCall
}

func newARState(c *ARConfig, tx *txn.Layer) *arState {
	return &arState{AdaptiveRoutingManager: armgr.New(c, tx), inbox: make(chan arCall, 4)}
}

// checkAR returns an ErrConfig for an adaptive routing configuration out
// of range on ports of dataVLs data VLs at most.
func checkAR(c *ARConfig, dataVLs int) error {
	if err := c.Check(dataVLs); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// arPhase programs the subnet just brought up.
func (s *SM) arPhase(ctx context.Context, res *Result) error {
	if s.ar == nil || s.subnet == nil {
		return nil
	}
	return s.phase(res, PhaseAR, func() error {
		r, warns, err := s.ar.Program(ctx, arView(s.subnet))
		res.AR = r
		for _, w := range warns {
			res.Warnings = append(res.Warnings, "ar: "+w)
		}
		return err
	})
}

// arView is what the manager needs of sn: its fabric, its switches with
// a LID, the fewest data VLs a cabled port runs.
func arView(sn *Subnet) *armgr.View {
	v := &armgr.View{Fabric: &sn.Fabric, DataVLs: subnetDataVLs(sn)}
	for _, i := range sn.Switches() {
		if lid := sn.LID[i][0]; lid != 0 {
			v.Switches = append(v.Switches, armgr.Switch{GUID: sn.Topo.Node(i).GUID, Node: i,
				Name: portName(sn.Topo, portRef(i, 0)), LID: lid})
		}
	}
	return v
}

// subnetDataVLs is the fewest data VLs a cabled port of sn runs (its
// PortInfo as last read or set), at least 1.
func subnetDataVLs(sn *Subnet) int {
	n := 0
	for _, l := range sn.Topo.Links() {
		for _, e := range []topologies.PortRef{l.A, l.B} {
			if !sn.Have[e.Node][e.Port] {
				continue
			}
			if v := mad.NumDataVLs(sn.PortInfo[e.Node][e.Port].OperationalVLs); v > 0 && (n == 0 || v < n) {
				n = v
			}
		}
	}
	return max(n, 1)
}

// arCall is a control call waiting for the SM's goroutine; set nil is a
// show.
type arCall struct {
	set   *ARSetting
	reply chan ARReply
}

// ErrNoAR is ARCall's error on an SM without the manager.
var ErrNoAR = errors.New("adaptive routing is not managed (ibsm --ar-mode)")

// ARCall hands a control call to the SM's goroutine and waits for its
// answer: set nil reads the configuration, else set changes it and the
// switches are reprogrammed at once (when the subnet is up; else at the
// next sweep). It is safe for concurrent use; the SM serves calls while
// it watches the subnet (Run), not during a sweep. A rejected setting is
// an error, with the reply saying why.
func (s *SM) ARCall(ctx context.Context, set *ARSetting) (ARReply, error) {
	if s.ar == nil {
		return ARReply{}, ErrNoAR
	}
	c := arCall{set: set, reply: make(chan ARReply, 1)}
	r, err := handOff(ctx, s, s.ar.inbox, c, c.reply)
	if err == nil && r.Event != nil && r.Event.Action == ARActionReject {
		return r, errors.New(r.Event.Reason)
	}
	return r, err
}

// serveAR answers the control calls that came in.
func (s *SM) serveAR(ctx context.Context) error {
	if s.ar == nil {
		return nil
	}
	return serveInbox(ctx, s.ar.inbox, s.arServe)
}

// arServe carries out one call: a setting is checked against the data
// VLs the ports run now (Config.OpVLs' bound before the subnet is up),
// and with the subnet up programmed at once.
func (s *SM) arServe(ctx context.Context, c arCall) error {
	var err error
	var ev *AREvent
	if c.set != nil {
		n := mad.NumDataVLs(s.cfg.OpVLs)
		var v *armgr.View
		if s.installed && s.subnet != nil {
			v = arView(s.subnet)
			n = min(n, v.DataVLs)
		}
		s.tx.SetPhase(PhaseAR)
		ev, err = s.ar.Apply(ctx, c.set, n, v)
		s.tx.SetPhase(PhaseWatch)
	}
	c.reply <- s.ar.Reply(s.installed, ev)
	return err
}
