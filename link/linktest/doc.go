// Package linktest holds test helpers for link.Endpoint implementations and
// their users: Recorder, a Dispatcher that hands what it receives to the
// test; Run, a conformance suite every Endpoint implementation passes; and
// LeakCheck, a goroutine leak check for start/stop tests (goleak, with the
// tree's options from internal/testsupport).
package linktest
