package nodeproc

import (
	"fmt"

	"ibfab/hca"
)

// CCAArgs are the "cca" op's arguments: the congestion control mode of
// every port of the HCA ("off", "iba" or "drb"; none only reads) and
// DRB's cap on the paths open to a destination (0 keeps it; default 4).
// A change starts every destination's state over. The op answers with
// the CCAStatus after the change.
type CCAArgs struct {
	Mode *hca.CCMode `json:"mode,omitempty"`
	Cap  int         `json:"cap,omitempty"`
}

// CCAStatus is an HCA's congestion control: mode, cap, counters
// (cnp_sent, cnp_received, becn_received, opens, closes, …) and every
// destination with state (dlid, sl, ccti, ipd_ns, active DLIDs and their
// notification counts); CCADest is one destination.
type (
	CCAStatus = hca.CCAStatus
	CCADest   = hca.CCADest
)

func (n *Node) cca(a CCAArgs) (CCAStatus, error) {
	if a.Mode == nil {
		if a.Cap != 0 {
			return CCAStatus{}, fmt.Errorf("cca: cap %d without a mode", a.Cap)
		}
		return n.ca.CCAStatus(), nil
	}
	if err := n.ca.SetCCA(*a.Mode, a.Cap); err != nil {
		return CCAStatus{}, fmt.Errorf("cca: %w", err)
	}
	return n.ca.CCAStatus(), nil
}
