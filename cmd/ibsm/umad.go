package main

import (
	"time"

	"ibfab/madport"
	"ibfab/madport/umad"
	"ibfab/sm"
)

// The umad scheme: "umad:CA:PORT", a real HCA port through the kernel's
// umad device.
func init() {
	sm.RegisterPort("umad", openUMAD)
}

// umadFiles is the machine umad ports open on; tests put a fake kernel
// (umadtest) here.
var umadFiles umad.Files = umad.OS

// umadTimeout is the timeout the kernel applies to each SMP; run sets it
// from --timeout (kernelTimeout).
var umadTimeout = kernelTimeout(sm.DefaultTimeout)

// kernelTimeout is the kernel's share of the SM's per-SMP timeout: 4/5 of
// it, so that the kernel hands a lost SMP back (ETIMEDOUT) before the SM's
// own deadline, and the SM's resend, with the same TID, finds the kernel
// no longer waiting for it (a second request with a TID in flight is
// refused). The kernel makes no retries: the SM counts its own.
func kernelTimeout(smTimeout time.Duration) time.Duration {
	return max(smTimeout*4/5, time.Millisecond)
}

func openUMAD(arg string) (madport.Port, error) {
	ca, port, err := umad.ParseSpec(arg)
	if err != nil {
		return nil, err
	}
	return umad.Open(umad.Config{CA: ca, Port: port, Timeout: umadTimeout, Files: umadFiles})
}
