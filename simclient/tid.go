package simclient

// The server owns bits 63-48 of the TID of every request (ibsim writes the
// client's slot there); a tidmemo.Memo remembers what the caller had in
// them, by the other 48 bits, for the last tidMemoSize requests.
const (
	tidLowBits  = 48
	tidMemoSize = 4096
)
