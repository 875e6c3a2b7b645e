// Package peerwatch gives a link the loss of signal a real cable has when
// the device at its other end dies. A veth keeps its carrier when the
// process behind its peer end is killed; without help the survivor would
// notice only by the silence of the link (the port's liveness timeout),
// which for fast detection costs a keepalive stream on every idle link.
// peerwatch wraps an Endpoint and watches the peer process through a pidfd:
// when it exits, the wrapped endpoint reports carrier down at once, at no
// cost while it lives. Watching a new peer (a restarted process) brings the
// carrier back.
package peerwatch
