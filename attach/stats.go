package attach

import "sync/atomic"

//go:generate go tool stringer -type=DropReason -linecomment

// DropReason says why a MAD did not get where it was going.
type DropReason uint8

// Drop reasons.
const (
	// DropNotAttached: no HCA attached yet
	DropNotAttached DropReason = iota // not_attached
	// DropUnconnected: a MAD on the socket of a slot without a client
	DropUnconnected // unconnected
	// DropSendFailed: the HCA refused a client's MAD (port down, closed)
	DropSendFailed // send_failed
	// DropNoRequest: a response no outstanding request waits for: late, or not a client's
	DropNoRequest // no_request
	// DropNoSM: an unsolicited MAD (trap, SMInfo, SA request) with no SM client
	DropNoSM // no_sm
	// DropNoClient: a request of another class no client takes, not a Get or Set
	DropNoClient // no_client
	// DropQueueFull: the client's queue was full
	DropQueueFull // queue_full
	// DropClientGone: the client disconnected before it could be given the MAD
	DropClientGone // client_gone
	// DropWriteFailed: the client's socket did not take it
	DropWriteFailed // write_failed
	// DropRMPPControl: an RMPP ACK, STOP or ABORT: the kernel's, never a client's
	DropRMPPControl // rmpp_control
	numDropReasons  // unknown
)

// Stats is the attach point's status, JSON-friendly.
type Stats struct {
	Name        string `json:"name"`    // socket base name
	Node        string `json:"node"`    // NodeID
	Clients     int    `json:"clients"` // connected now
	SMSlot      int    `json:"sm_slot"` // slot of the client unsolicited MADs go to, -1 for none
	Connects    uint64 `json:"connects"`
	Refused     uint64 `json:"refused"` // Connects answered with an error
	Disconnects uint64 `json:"disconnects"`
	// Dead counts clients found gone without saying Disconnect.
	Dead        uint64 `json:"dead"`
	CtlMessages uint64 `json:"ctl_messages"`
	CtlErrors   uint64 `json:"ctl_errors"` // answered with CtlError
	// BadMessages counts malformed datagrams: control messages of the
	// wrong size or magic (ignored, as ibsim does), of an unknown type or
	// from a client that is not connected (answered with CtlError), MAD
	// datagrams of the wrong size (dropped).
	BadMessages uint64 `json:"bad_messages"`
	MADsIn      uint64 `json:"mads_in"`  // from clients, into the HCA
	MADsOut     uint64 `json:"mads_out"` // written to clients
	Outstanding int    `json:"outstanding"`
	Timeouts    uint64 `json:"timeouts"` // requests handed back with ETIMEDOUT
	Retries     uint64 `json:"retries"`  // requests resent
	// Unmatched counts the Gets and Sets no client takes, answered with
	// status "unsupported method/attribute" as the kernel answers them.
	Unmatched uint64            `json:"unmatched"`
	Drops     map[string]uint64 `json:"drops,omitempty"`
	DropTotal uint64            `json:"drop_total"`
}

type counters struct {
	connects, refused, disconnects, dead atomic.Uint64
	ctlMessages, ctlErrors, bad          atomic.Uint64
	madsIn, madsOut, timeouts, retries   atomic.Uint64
	unmatched                            atomic.Uint64
	drops                                [numDropReasons]atomic.Uint64
}

func (s *Server) drop(r DropReason) { s.st.drops[r].Add(1) }

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	st := Stats{
		Name: s.cfg.Name, Node: s.NodeID(), SMSlot: -1,
		Connects: s.st.connects.Load(), Refused: s.st.refused.Load(),
		Disconnects: s.st.disconnects.Load(), Dead: s.st.dead.Load(),
		CtlMessages: s.st.ctlMessages.Load(), CtlErrors: s.st.ctlErrors.Load(),
		BadMessages: s.st.bad.Load(), MADsIn: s.st.madsIn.Load(), MADsOut: s.st.madsOut.Load(),
		Timeouts: s.st.timeouts.Load(), Retries: s.st.retries.Load(),
		Unmatched: s.st.unmatched.Load(),
	}
	for r := range numDropReasons {
		if n := s.st.drops[r].Load(); n > 0 {
			if st.Drops == nil {
				st.Drops = map[string]uint64{}
			}
			st.Drops[r.String()] = n
			st.DropTotal += n
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st.Outstanding = len(s.mu.pending)
	for _, sl := range s.slots {
		if c := sl.cl; c != nil && !c.gone {
			st.Clients++
			if c.issm && st.SMSlot < 0 {
				st.SMSlot = int(sl.n)
			}
		}
	}
	return st
}
