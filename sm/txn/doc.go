// Package txn is the subnet manager's transaction layer: every SMP (or
// GMP) the SM sends is a transaction with a TID, held in a window of SMPs
// in flight; one that gets no answer within Config.Timeout is sent again,
// up to Config.Retries times, then fails with ErrTimeout. Everything runs
// on the caller's goroutine: Run sends what the window admits, then waits
// on the port for one MAD or the earliest deadline, whichever comes
// first, and calls the transaction's callback, which may queue more. What
// answers nothing (requests, traps, SA MADs) goes to the caller's hooks.
// Deadlines are timers on the SM's clock, so a fake port with a manual
// clock times requests out without sleeping.
//
// The window adapts as TCP's congestion window does (AIMD): it starts at
// Config.Window, its maximum; a loss halves it (down to 1), and each run
// of as many answers as the window holds, without a loss, widens it by
// one again. A loss is a timeout of an SMP when one sent after it was
// answered at its first attempt: the fabric answers in order but dropped
// this one, as a switch or a simulator does when a burst overflows its
// small VL15 buffer, and a narrower window then costs less than waiting
// out the timeouts of a wide one. A timeout with nothing sent later
// answered is a stall (a simulator or an SM not scheduled on a loaded
// machine, a dead path): the answers may still come, and a narrower
// window would only make each round trip count more, so the window
// stays. A burst of timeouts is one loss: only an SMP sent after the last
// cut cuts again, so the window halves at most once per Timeout. Resends
// wait for room in the window too, ahead of new requests.
//
// Bursts: however much room the window has, at most Config.Burst SMPs go
// out back to back; more wait for an answer (or a timeout, or nothing in
// flight). Every SMP crosses the SM's first hop, and while that switch
// does not forward (a soft switch's process waiting for the CPU) it also
// passes no answer back, so the SM sends it little more than one burst,
// which a small VL15 buffer takes (silicon's may hold only a few SMPs).
// Without the limit, new work queued into an open window, such as the
// scans of the three neighbours of a killed switch (15 SMPs at once),
// overflows a buffer smaller than the window, and each SMP dropped is
// resent only after a full Timeout.
package txn
