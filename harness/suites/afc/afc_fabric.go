package afc

import (
	"context"
	"fmt"
	"sync"
	"time"

	"ibfab/harness"
	"ibfab/harness/suites/runner"
	"ibfab/internal/ctl"
	"ibfab/nodeproc"
	"ibfab/sm"
	"ibfab/softswitch"
	"ibfab/wire/mad"
)

// What the experiments set on the SM: D-mod-K routes, adaptive routing
// managed (off until a setup says otherwise) with SL s on VL s and equal
// VL arbitration, changed at run time through the control socket.

// afcSMArgs are ibsm's flags beyond DefaultSMArgs. Sweeps every 30 s: at
// a time scale in the hundreds a sweep's SMPs wait behind 4 KB data
// packets on every hop, and the fabric does not change.
func afcSMArgs(control string) []string {
	return []string{"--routing", "dmodk", "--ar-mode", "off", "--control", control, "--sweep-interval", "30s"}
}

// afcSetAR sets the switches' adaptive routing mode and AFC VL through
// ibsm's control socket and returns once every switch holds it.
func afcSetAR(ctx context.Context, control string, mode mad.ARMode, afcVL uint8) error {
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var rep sm.ARReply
	if err := ctl.Call(cctx, control, "ar-set", sm.ARSetting{Mode: &mode, AFCVL: &afcVL}, &rep); err != nil {
		return fmt.Errorf("ar-set %s: %w", mode, err)
	}
	switch e := rep.Event; {
	case e == nil:
		return fmt.Errorf("ar-set %s: no event in the answer", mode)
	case e.Action != sm.ARActionSet:
		return fmt.Errorf("ar-set %s: %s: %s%s", mode, e.Action, e.Reason, e.Error)
	case e.Failures > 0:
		return fmt.Errorf("ar-set %s: %d failures", mode, e.Failures)
	case mode != mad.AROff && e.Enabled != e.Switches:
		return fmt.Errorf("ar-set %s: %d of %d switches on", mode, e.Enabled, e.Switches)
	}
	return nil
}

// afcDataVLs is the data VLs of every port (port.DefaultDataVLs): the
// buffer list names them all, so that a VL a setup does not use has no
// buffer rather than --rx-blocks'.
const afcDataVLs = 8

// afcCreditSlack makes every switch port advertise each release at once
// (port.Config.CreditSlack): the upstream switch's view of a buffer is
// then its occupancy, not the half buffer the default coalescing may hold
// back, which alone would cross a 75 % threshold on a 7-packet VL.
const afcCreditSlack = 1

// afcNodeArgs are every node's flags: none, the switches are set per
// setup at run time (afcConfigureSwitch).
func afcNodeArgs() []string { return nil }

// afcConfigureSwitch sets switch sw's architecture and its ports' buffers
// per VL (the VLs past blocks get none). The switch advertises the new
// buffers to its neighbours at once, whose downstream views follow.
func afcConfigureSwitch(ctx context.Context, fabric, sw string, voq bool, blocks []int) error {
	all := make([]int, afcDataVLs)
	copy(all, blocks)
	slack := afcCreditSlack
	arch := softswitch.ArchIQ
	if voq {
		arch = softswitch.ArchVOQ
	}
	a := nodeproc.SwitchConfigArgs{VLBlocks: all, Arch: &arch, CreditSlack: &slack}
	_, err := harness.SwitchConfig(ctx, fabric, sw, a)
	return err
}

// afcWatch makes switch sw count the packets for lid per input port and
// VL, from zero.
func afcWatch(ctx context.Context, fabric, sw string, lid uint16) error {
	_, err := harness.Watch(ctx, fabric, sw, []uint16{lid})
	return err
}

// afcSwitches is every switch's status at one moment.
type afcSwitches map[string]nodeproc.Status

// readSwitches reads every switch's status.
func (r *afcRun) readSwitches(ctx context.Context) (afcSwitches, error) {
	s := afcSwitches{}
	var mu sync.Mutex
	err := runner.ForEach(r.Switches, func(sw string) error {
		st, err := harness.NodeState(ctx, r.Fabric(), sw)
		if err != nil {
			return err
		}
		mu.Lock()
		s[sw] = st
		mu.Unlock()
		return nil
	})
	return s, err
}

// adapted is the packets every switch port has sent away from its LFT
// port (or marked adapted) so far.
func (s afcSwitches) adapted() uint64 {
	var n uint64
	for _, st := range s {
		for _, p := range st.Ports {
			n += p.Adapted
		}
	}
	return n
}

// occupancyByVL is, per data VL ("VL0", …), the fullest switch input
// buffer: blocks held over the VL's buffer.
func (s afcSwitches) occupancyByVL() map[string]float64 {
	out := map[string]float64{}
	for _, st := range s {
		for _, p := range st.Ports {
			for _, c := range p.Credits {
				if c.RxCapacity > 0 {
					k := fmt.Sprintf("VL%d", c.VL)
					out[k] = max(out[k], float64(c.RxUsed)/float64(c.RxCapacity))
				}
			}
		}
	}
	return out
}

// fullest is the fullest switch input VL, "switch/port/VLn", and its
// occupancy.
func (s afcSwitches) fullest() (string, float64) {
	name, m := "", -1.0
	for sw, st := range s {
		for _, p := range st.Ports {
			for _, c := range p.Credits {
				if c.RxCapacity == 0 {
					continue
				}
				q := fmt.Sprintf("%s/%d/VL%d", sw, p.Port, c.VL)
				if o := float64(c.RxUsed) / float64(c.RxCapacity); o > m || o == m && q < name {
					name, m = q, o
				}
			}
		}
	}
	return name, max(m, 0)
}

// afcQueue is one switch input queue: "switch/port/VLn" and its VL.
type afcQueue struct {
	name string
	vl   uint8
}

// hotQueues are the switch input queues that received watched packets
// since prev.
func (s afcSwitches) hotQueues(prev afcSwitches) []afcQueue {
	var out []afcQueue
	for sw, st := range s {
		was := map[[2]int]uint64{}
		for _, p := range prev[sw].Ports {
			for _, c := range p.Credits {
				was[[2]int{p.Port, int(c.VL)}] = c.Watched
			}
		}
		for _, p := range st.Ports {
			for _, c := range p.Credits {
				if c.Watched > was[[2]int{p.Port, int(c.VL)}] {
					out = append(out, afcQueue{name: fmt.Sprintf("%s/%d/VL%d", sw, p.Port, c.VL), vl: uint8(c.VL)})
				}
			}
		}
	}
	return out
}
