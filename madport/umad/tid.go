package umad

// The kernel owns the upper 32 bits of the TID of every request (it writes
// the agent's hi_tid there, to route the response back); a tidmemo.Memo
// remembers what the caller had in them, by the lower 32 bits, for the
// last tidMemoSize requests.
const (
	tidLowBits  = 32
	tidMemoSize = 8192
)
