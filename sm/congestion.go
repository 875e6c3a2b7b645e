package sm

import (
	"context"
	"fmt"
	"time"

	"ibfab/sm/ccmgr"
	"ibfab/sm/txn"
)

// The congestion control manager lives in package sm/ccmgr; these are its
// types under the names sm's callers (cmd/ibsm, the harness) know.
type (
	CCConfig   = ccmgr.Config
	CCSettings = ccmgr.Settings
	CCResult   = ccmgr.Result
	CCLogEvent = ccmgr.LogEvent
)

// MaxCCTEntries is the most cc_cct entries: CCTI_Limit is 14 bits.
const MaxCCTEntries = ccmgr.MaxCCTEntries

// ErrCCConfig is the error of a congestion control file that does not
// parse.
var ErrCCConfig = ccmgr.ErrConfig

// LoadCCSettings reads a congestion control file (ccmgr.LoadSettings).
func LoadCCSettings(path string) (*CCSettings, error) { return ccmgr.LoadSettings(path) }

// PhaseCC is the phase that programs congestion control and reads the
// logs.
const PhaseCC = "cc"

// CongestionManager is the congestion control manager as the SM drives
// it (ccmgr.Manager), always from the SM's goroutine: after a sweep
// brought the subnet up, and when a periodic log read is due.
type CongestionManager interface {
	// Enabled reports whether the manager programs the subnet.
	Enabled() bool
	// Sweep programs nodes, the subnet's switches and CA ports with a
	// LID, and reads their logs; warn hears what went wrong. The
	// Result is never nil.
	Sweep(ctx context.Context, nodes []ccmgr.Node, warn func(string, ...any)) (*CCResult, error)
	// LogDue returns when the next periodic log read is due, if one is.
	LogDue() (time.Time, bool)
	// ReadLogs is the periodic log read.
	ReadLogs(ctx context.Context) error
	// Forget drops what the manager knows of the nodes.
	Forget()
}

var (
	_ CongestionManager = (*ccmgr.Manager)(nil)
	_ ccmgr.Sender      = (*txn.Layer)(nil)
)

// ccOn reports whether the manager programs the subnet.
func (s *SM) ccOn() bool { return s.cc != nil && s.cc.Enabled() }

// ccPhase programs the subnet just brought up and reads the logs.
func (s *SM) ccPhase(ctx context.Context, res *Result) error {
	if !s.ccOn() || s.subnet == nil {
		return nil
	}
	return s.phase(res, PhaseCC, func() error {
		warn := func(format string, args ...any) {
			res.Warnings = append(res.Warnings, "cc: "+fmt.Sprintf(format, args...))
		}
		r, err := s.cc.Sweep(ctx, ccNodes(s.subnet), warn)
		res.CC = r
		return err
	})
}

// ccNodes returns the nodes the manager programs: sn's switches and CA
// ports with a LID.
func ccNodes(sn *Subnet) []ccmgr.Node {
	var out []ccmgr.Node
	for i := range sn.Topo.NumNodes() {
		n := sn.Topo.Node(i)
		for p := 0; p < len(sn.LID[i]) && p <= n.NumPorts; p++ {
			lid := sn.LID[i][p]
			if lid == 0 || (sn.IsSwitch(i) && p != 0) {
				continue
			}
			out = append(out, ccmgr.Node{GUID: n.GUID, Port: p, Name: portName(sn.Topo, portRef(i, p)), LID: lid,
				Switch: sn.IsSwitch(i), NumPorts: n.NumPorts})
		}
	}
	return out
}

// ccLogDue returns when the next periodic log read is due, if one is: only
// with the subnet up.
func (s *SM) ccLogDue() (time.Time, bool) {
	if !s.ccOn() || !s.installed {
		return time.Time{}, false
	}
	return s.cc.LogDue()
}

// ccPoll reads the logs when the periodic read is due.
func (s *SM) ccPoll(ctx context.Context) error {
	due, ok := s.ccLogDue()
	if !ok || s.clk.Now().Before(due) {
		return nil
	}
	s.tx.SetPhase(PhaseCC)
	defer s.tx.SetPhase(PhaseWatch)
	return s.cc.ReadLogs(ctx)
}
