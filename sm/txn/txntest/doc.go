// Package txntest is test support for the managers that send through the
// SM's transaction layer (packages sm/ccmgr and sm/armgr): Queue, a fake
// of the layer's Get, Set, Run and Sends that answers every request from
// a function of the test's, in the order sent, on the goroutine that
// calls Run, as txn.Layer runs its callbacks.
package txntest
