// Package testsupport holds what the unit tests of many packages share:
// the goroutine leak check's options and TestMain (over goleak), waiting
// on a condition instead of sleeping (Poll, WaitFor, WaitBlocked), a buffer a
// process or goroutine writes while a test reads it (SyncBuffer) and a
// writer into a test's log (LogWriter).
// Tests alone import it.
package testsupport
