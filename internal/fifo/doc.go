// Package fifo is a first-in first-out queue that grows as needed up to
// a limit of its own, which one goroutine Serves in order: what a
// kernel's list of received MADs is (ib_umad's receive list holds up to
// 200,000), where a buffered channel would need its whole capacity
// allocated up front and would make the limit the allocation.
package fifo
