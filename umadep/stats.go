package umadep

import "sync/atomic"

// Stats counts what the endpoint did.
type Stats struct {
	Connections atomic.Uint64 // umad connections accepted
	FromClients atomic.Uint64 // MADs clients wrote
	Sent        atomic.Uint64 // MADs (and segments) handed to the HCA
	SendFailed  atomic.Uint64
	Claimed     atomic.Uint64 // MADs the HCA delivered that the endpoint took
	Delivered   atomic.Uint64 // written to a client
	Dropped     atomic.Uint64 // queue full, write failed, response nothing waits for
	BadMessages atomic.Uint64 // malformed from a client
	Timeouts    atomic.Uint64 // requests handed back with ETIMEDOUT
	Retries     atomic.Uint64
	RMPPSent    atomic.Uint64 // transfers completed
	RMPPRecv    atomic.Uint64
	RMPPFailed  atomic.Uint64
}

// StatsSnapshot is Stats as plain numbers, JSON-friendly.
type StatsSnapshot struct {
	Connections uint64 `json:"connections"`
	FromClients uint64 `json:"from_clients"`
	Sent        uint64 `json:"sent"`
	SendFailed  uint64 `json:"send_failed"`
	Claimed     uint64 `json:"claimed"`
	Delivered   uint64 `json:"delivered"`
	Dropped     uint64 `json:"dropped"`
	BadMessages uint64 `json:"bad_messages"`
	Timeouts    uint64 `json:"timeouts"`
	Retries     uint64 `json:"retries"`
	RMPPSent    uint64 `json:"rmpp_sent"`
	RMPPRecv    uint64 `json:"rmpp_recv"`
	RMPPFailed  uint64 `json:"rmpp_failed"`
	Agents      int    `json:"agents"`
}

// Stats returns the endpoint's counters.
func (s *Server) Stats() StatsSnapshot {
	s.mu.Lock()
	agents := len(s.mu.agents)
	s.mu.Unlock()
	st := &s.st
	return StatsSnapshot{
		Connections: st.Connections.Load(), FromClients: st.FromClients.Load(), Sent: st.Sent.Load(),
		SendFailed: st.SendFailed.Load(), Claimed: st.Claimed.Load(), Delivered: st.Delivered.Load(),
		Dropped: st.Dropped.Load(), BadMessages: st.BadMessages.Load(), Timeouts: st.Timeouts.Load(),
		Retries: st.Retries.Load(), RMPPSent: st.RMPPSent.Load(), RMPPRecv: st.RMPPRecv.Load(),
		RMPPFailed: st.RMPPFailed.Load(), Agents: agents,
	}
}
