package txn

import "time"

// Defaults SetDefaults fills in for zero Config fields.
const (
	DefaultWindow       = 16
	DefaultTimeout      = 200 * time.Millisecond
	DefaultProbeTimeout = 20 * time.Millisecond
	DefaultRetries      = 3
	// DefaultTIDHigh is arbitrary and fixed, so that TIDs are
	// reproducible.
	DefaultTIDHigh = 0x1b5a
)

// Config is a layer's: how many SMPs are in flight, how long each waits
// for its answer, and how often it is sent.
type Config struct {
	Window int // SMPs in flight at once, at most (losses narrow it; see the package doc)
	// Burst is how many SMPs the SM sends back to back, at most, before
	// an answer comes in (or a timeout passes): every SMP crosses the
	// SM's first hop, and a switch slow to forward (the soft switch's
	// process waiting for the CPU) drops what its VL15 buffer cannot
	// hold. 0 takes the window: the soft switch's buffer
	// holds 32 SMPs, and a limit of 4 (OpenSM's max_wire_smps) cut a
	// killed switch's 15 scan SMPs into four round trips. A fabric whose
	// first hop holds less wants that 4; -1 for none (the window alone).
	Burst   int
	Timeout time.Duration // per attempt
	// ProbeTimeout is how long a probe of a switch that may be gone
	// waits, once, before the SM reads the port it goes through again
	// (partial discovery); at most Timeout.
	ProbeTimeout time.Duration
	Retries      int    // resends after the first attempt; -1 for none
	TIDHigh      uint32 // the upper half of every TID (0: a fixed value)
}

// SetDefaults gives each zero field its default; Burst and Retries also
// take -1 for none, and ProbeTimeout is cut to Timeout.
func (c *Config) SetDefaults() {
	orDefault(&c.Window, DefaultWindow)
	switch {
	case c.Burst == 0:
		c.Burst = c.Window
	case c.Burst < 0:
		c.Burst = 0
	}
	orDefault(&c.Timeout, DefaultTimeout)
	orDefault(&c.ProbeTimeout, DefaultProbeTimeout)
	c.ProbeTimeout = min(c.ProbeTimeout, c.Timeout)
	switch {
	case c.Retries == 0:
		c.Retries = DefaultRetries
	case c.Retries < 0:
		c.Retries = 0
	}
	orDefault(&c.TIDHigh, DefaultTIDHigh)
}

// orDefault sets *v to d when it is zero.
func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}
