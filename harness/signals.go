package harness

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// forwardedSignals are those a terminal, a supervisor or `kill` sends to
// end or interrupt a command: exec passes them to the command it runs, so
// that the command ends with the exec rather than run on until `ibfab
// down`.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// forwarder passes the forwardedSignals this process receives to a
// command. It catches them from before the command starts: a signal that
// comes while it starts is not lost, and the command starts with their
// default actions even where this process was started ignoring them (a
// background job ignores SIGINT), as a handled signal is reset at exec.
type forwarder struct{ sigs chan os.Signal }

func newForwarder() *forwarder {
	f := &forwarder{sigs: make(chan os.Signal, len(forwardedSignals))}
	signal.Notify(f.sigs, forwardedSignals...)
	return f
}

// stop ends the forwarding.
func (f *forwarder) stop() { signal.Stop(f.sigs) }

// wait waits for the started command c, passing it the signals, then
// stops.
func (f *forwarder) wait(c *exec.Cmd) error {
	defer f.stop()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	for {
		select {
		case err := <-done:
			return err
		case s := <-f.sigs:
			_ = c.Process.Signal(s) // gone already: Wait returns next
		}
	}
}
