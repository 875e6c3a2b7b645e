// Package clock is the time source of everything in ibfab that waits: 8b/10b
// pacing, credit keepalives, link-liveness timeouts, SM sweeps and trap
// repeats. Code takes a Clock instead of calling the time package, so that
//
//   - production runs on Real, or on Scaled(Real(), s) under --time-scale s,
//     which stretches all emulated time for fabrics too big for the CPU;
//   - unit tests run on a Manual clock that moves only when the test calls
//     Advance, so they never sleep and never race the wall clock.
//
// A Timer callback runs on its own goroutine with Real and Scaled (as with
// time.AfterFunc) and on the goroutine that calls Advance with Manual; code
// that must work under both takes its own locks in the callback and never
// holds them while calling Stop or Reset from a path Advance might be on.
package clock
