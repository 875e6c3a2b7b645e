package suites

import (
	"context"
	"fmt"
	"time"

	"ibfab/internal/ctl"
	"ibfab/sm"
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
