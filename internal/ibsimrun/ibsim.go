// Package ibsimrun runs Debian's ibsim for integration tests and
// benchmarks: Start writes a topology file, creates a network namespace
// named "ibf-t…" (ibsim's sockets are abstract, so one simulated fabric per
// namespace), starts ibsim there on the file and waits until its console
// prompt shows; Close kills it by its PID and deletes the namespace.
//
// In between, Console drives ibsim's console on its stdin (Route checks a
// path through the forwarding tables the SM wrote), Command builds a
// command that runs inside the namespace, and Diag runs one of the
// infiniband-diags (or OpenSM) with libumad2sim preloaded, so that it
// talks to the simulator instead of /dev/infiniband. StartT does Start
// for a test, failing it on error and closing in t.Cleanup.
package ibsimrun

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vishvananda/netns"

	"ibfab/fabricnet"
	"ibfab/topologies"
)

// Prefix starts the name of every namespace this package creates.
const Prefix = "ibf-t"

// Limits of ibsim as Debian builds it (ibsim/sim.h): MAXNETNODES,
// MAXNETSWITCHS and MAXNETPORTS, the defaults of its -N, -S and -P
// options; a file with more nodes or switches does not load. Routes have
// at most MaxHops hops (its console's Route gives up after that).
const (
	MaxNodes    = 2048
	MaxSwitches = 256
	MaxPorts    = MaxSwitches*36 + MaxNodes*2
	MaxHops     = 16
)

// ReadyTimeout bounds the wait for ibsim's console prompt and for each
// console command: a broken setup fails instead of hanging.
const ReadyTimeout = 2 * time.Minute

// prompt is what ibsim prints after loading and after each command.
const prompt = "sim> "

// Errors.
var (
	ErrNotRoot    = errors.New("ibsimrun: ibsim runs in a network namespace: run as root")
	ErrNoIbsim    = errors.New("ibsimrun: ibsim not found: install ibsim-utils (make debs)")
	ErrNoUMAD2Sim = errors.New("ibsimrun: libumad2sim.so not found: install libumad2sim0 (make debs)")
	ErrExited     = errors.New("ibsimrun: ibsim exited")
	ErrTooBig     = errors.New("ibsimrun: topology exceeds ibsim's limits")
)

// Sim is a running ibsim.
type Sim struct {
	NS   string // the namespace
	File string // the topology file ibsim loaded
	Topo *topologies.Topology

	ns      netns.NsHandle
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	out     *console
	exited  chan struct{}
	waitErr error

	mu     sync.Mutex // one console command at a time
	closed bool
}

var seq atomic.Uint32

// Start runs ibsim on topo in a new namespace; dir receives the topology
// file (and nothing else). It fails when topo exceeds ibsim's limits.
func Start(topo *topologies.Topology, dir string) (*Sim, error) {
	if err := CheckLimits(topo); err != nil {
		return nil, err
	}
	return start(topo, dir, nil)
}

// StartLarge is Start with ibsim's limits raised to what topo needs
// (-N, -S, -P, and -L to its LIDs), as ibsim is run at sizes past its
// defaults.
func StartLarge(topo *topologies.Topology, dir string) (*Sim, error) {
	ports := 0
	for _, n := range topo.Nodes() {
		ports += n.NumPorts + 1
	}
	linear := (topo.NumNodes()/1024 + 2) * 1024
	return start(topo, dir, []string{"-N", fmt.Sprint(topo.NumNodes() + 1), "-S", fmt.Sprint(topo.Count(topologies.Switch) + 1),
		"-P", fmt.Sprint(ports + 1), "-L", fmt.Sprint(linear)})
}

func start(topo *topologies.Topology, dir string, limits []string) (*Sim, error) {
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	if _, err := exec.LookPath("ibsim"); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoIbsim, err)
	}
	file := filepath.Join(dir, "fabric.topo")
	if err := topologies.WriteFile(file, topo); err != nil {
		return nil, err
	}
	s := &Sim{NS: fmt.Sprintf("%s%d-sim%d", Prefix, os.Getpid(), seq.Add(1)), File: file, Topo: topo,
		out: newConsole(), exited: make(chan struct{})}
	if err := netns.DeleteNamed(s.NS); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("ibsimrun: removing stale namespace %s: %w", s.NS, err)
	}
	h, err := fabricnet.NewNamespace(s.NS)
	if err != nil {
		if h.IsOpen() {
			h.Close()
		}
		netns.DeleteNamed(s.NS)
		return nil, err
	}
	s.ns = h
	// ibsim reads console commands on stdin and quits at EOF: the pipe
	// stays open until Close.
	s.cmd = exec.Command("ibsim", append(append([]string{"-s"}, limits...), file)...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		s.removeNS()
		return nil, err
	}
	// Started from a thread inside the namespace, ibsim is born there.
	if err := fabricnet.DoIn(h, s.cmd.Start); err != nil {
		s.removeNS()
		return nil, fmt.Errorf("ibsimrun: starting ibsim: %w", err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	if _, err := s.out.next(s.exited, ReadyTimeout); err != nil {
		err = fmt.Errorf("ibsimrun: ibsim on %s not ready: %w\n%s", file, err, s.out.all())
		s.Close()
		return nil, err
	}
	return s, nil
}

// CheckLimits returns ErrTooBig when topo has more nodes or switches than
// ibsim takes.
func CheckLimits(topo *topologies.Topology) error {
	nodes, sw := topo.NumNodes(), topo.Count(topologies.Switch)
	ports := 0
	for _, n := range topo.Nodes() {
		ports += n.NumPorts + 1
	}
	if nodes > MaxNodes || sw > MaxSwitches || ports > MaxPorts {
		return fmt.Errorf("%w: %d nodes (at most %d), %d switches (at most %d), %d ports (at most %d)",
			ErrTooBig, nodes, MaxNodes, sw, MaxSwitches, ports, MaxPorts)
	}
	return nil
}

// PID returns ibsim's process ID.
func (s *Sim) PID() int { return s.cmd.Process.Pid }

// Output returns everything ibsim printed so far.
func (s *Sim) Output() string { return s.out.all() }

// Console runs one console command (without the newline) and returns what
// ibsim printed for it, up to its next prompt.
func (s *Sim) Console(cmd string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", errors.New("ibsimrun: closed")
	}
	if strings.ContainsAny(cmd, "\n") {
		return "", fmt.Errorf("ibsimrun: console command %q has a newline", cmd)
	}
	if _, err := io.WriteString(s.stdin, cmd+"\n"); err != nil {
		return "", fmt.Errorf("ibsimrun: console: %w", err)
	}
	out, err := s.out.next(s.exited, ReadyTimeout)
	if err != nil {
		return out, fmt.Errorf("ibsimrun: console %q: %w", cmd, err)
	}
	return out, nil
}

// Route is what ibsim's Route console command found.
type Route struct {
	OK   bool
	Hops int    // links crossed
	Text string // ibsim's output
	// TooLong: ibsim gave up after MaxHops iterations ("no route found
	// after 16 hops"), which says nothing about the tables beyond; Last
	// and LastPort name the node and port the walk had reached.
	TooLong  bool
	Last     string
	LastPort int
}

// Route asks ibsim to follow the forwarding tables from LID from to LID
// to: OK when the path reaches to's port through Active ports.
func (s *Sim) Route(from, to uint16) (Route, error) {
	out, err := s.Console(fmt.Sprintf("Route %d %d", from, to))
	if err != nil {
		return Route{}, err
	}
	return ParseRoute(out, to), nil
}

// Trace is Route for paths of any length: where ibsim's walk stops at its
// hop limit, Trace asks again from the node it reached (lid names that
// node's LID: a switch's, whatever the port, or a CA port's), which
// follows the same tables since a switch forwards by destination alone.
// The Route returned adds up the walks.
func (s *Sim) Trace(from, to uint16, lid func(node string, port int) (uint16, bool)) (Route, error) {
	var all Route
	for range 64 {
		r, err := s.Route(from, to)
		if err != nil {
			return all, err
		}
		all.Hops += r.Hops
		all.Text += r.Text
		all.OK, all.TooLong, all.Last, all.LastPort = r.OK, r.TooLong, r.Last, r.LastPort
		if r.OK || !r.TooLong {
			return all, nil
		}
		next, ok := lid(r.Last, r.LastPort)
		if !ok {
			return all, fmt.Errorf("ibsimrun: Route %d %d stopped at %q port %d, whose LID is unknown", from, to, r.Last, r.LastPort)
		}
		from = next
	}
	return all, nil
}

// ParseRoute reads the output of ibsim's "Route FROM TO": a "From node"
// line, one "[out] -> "node"[in]" line per hop, and "To node … lid TO" when
// the destination was reached; any other ending (a bad port state, a bad
// forwarding table entry, the hop limit) is a failure.
func ParseRoute(out string, to uint16) Route {
	r := Route{Text: out}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "From node "):
			// From node "ca4" port 1 lid 1
			r.Last, r.LastPort = quotedAndNumber(strings.TrimPrefix(line, "From node "), " port ")
		case strings.HasPrefix(line, "[") && strings.Contains(line, "] -> "):
			r.Hops++
			// [3] -> "sw1"[3]
			_, hop, _ := strings.Cut(line, "] -> ")
			r.Last, r.LastPort = quotedAndNumber(hop, "[")
		case strings.HasPrefix(line, "To node ") && strings.HasSuffix(line, " lid "+strconv.Itoa(int(to))):
			r.OK = true
		case strings.HasPrefix(line, "no route found after "):
			r.TooLong = true
		}
	}
	return r
}

// quotedAndNumber reads `"name"` then sep then a number.
func quotedAndNumber(s, sep string) (string, int) {
	name, rest, ok := strings.Cut(strings.TrimPrefix(s, `"`), `"`)
	if !ok {
		return "", 0
	}
	rest = strings.TrimPrefix(rest, sep)
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(rest)
	}
	n, _ := strconv.Atoi(rest[:end])
	return name, n
}

// Command returns a command that runs inside the namespace (through
// ip netns exec, which execs it in place: the PID is the command's).
// env is added to the environment.
func (s *Sim) Command(ctx context.Context, env []string, name string, args ...string) *exec.Cmd {
	argv := append([]string{"netns", "exec", s.NS, "env"}, env...)
	argv = append(argv, name)
	argv = append(argv, args...)
	return exec.CommandContext(ctx, "ip", argv...)
}

// DiagEnv returns the environment that points a libibumad program at the
// simulator: libumad2sim preloaded.
func DiagEnv() ([]string, error) {
	lib, err := UMAD2Sim()
	if err != nil {
		return nil, err
	}
	return []string{"LD_PRELOAD=" + lib}, nil
}

// Diag runs a libibumad program (ibnetdiscover, ibroute, ...) in the
// namespace with libumad2sim preloaded and returns its standard output;
// its standard error (umad2sim's "attached as client" notes) goes into
// the error when it fails.
func (s *Sim) Diag(ctx context.Context, name string, args ...string) ([]byte, error) {
	env, err := DiagEnv()
	if err != nil {
		return nil, err
	}
	c := s.Command(ctx, env, name, args...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

// UMAD2SimGlobs are where libumad2sim.so is installed: Debian's multiarch
// directories first (package UMAD2SimPackage), then other layouts.
var UMAD2SimGlobs = []string{
	"/usr/lib/*/umad2sim/libumad2sim.so",
	"/usr/lib64/umad2sim/libumad2sim.so",
	"/usr/lib/umad2sim/libumad2sim.so",
	"/usr/local/lib/umad2sim/libumad2sim.so",
}

// UMAD2SimPackage is the Debian package that installs libumad2sim.so.
const UMAD2SimPackage = "libumad2sim0"

// UMAD2Sim returns the path of libumad2sim.so, ibsim's preload library
// that turns libibumad's kernel calls into ibsim-protocol messages: at one
// of UMAD2SimGlobs, or wherever dpkg says the package put it. The error,
// ErrNoUMAD2Sim, names the package to install.
func UMAD2Sim() (string, error) {
	for _, g := range UMAD2SimGlobs {
		if m, _ := filepath.Glob(g); len(m) > 0 {
			return m[0], nil
		}
	}
	if out, err := exec.Command("dpkg", "-L", UMAD2SimPackage).Output(); err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasSuffix(l, "/libumad2sim.so") {
				if _, err := os.Stat(l); err == nil {
					return l, nil
				}
			}
		}
	}
	return "", fmt.Errorf("%w (apt-get install %s)", ErrNoUMAD2Sim, UMAD2SimPackage)
}

// Close kills ibsim by its PID, waits for it, and deletes the namespace.
func (s *Sim) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.stdin.Close()
	var errs []error
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		errs = append(errs, fmt.Errorf("ibsimrun: killing ibsim (pid %d): %w", s.PID(), err))
	}
	select {
	case <-s.exited:
	case <-time.After(ReadyTimeout):
		errs = append(errs, fmt.Errorf("ibsimrun: ibsim (pid %d) did not exit after SIGKILL", s.PID()))
	}
	errs = append(errs, s.removeNS())
	return errors.Join(errs...)
}

func (s *Sim) removeNS() error {
	if s.ns.IsOpen() {
		s.ns.Close()
	}
	if err := netns.DeleteNamed(s.NS); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("ibsimrun: deleting namespace %s: %w", s.NS, err)
	}
	return nil
}

// console collects ibsim's output and cuts it at its prompts.
type console struct {
	mu    sync.Mutex
	buf   bytes.Buffer // everything
	read  int          // consumed by next, up to and with a prompt
	grown chan struct{}
}

func newConsole() *console { return &console{grown: make(chan struct{})} }

func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	close(c.grown)
	c.grown = make(chan struct{})
	return len(p), nil
}

func (c *console) all() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// next waits for the next prompt and returns the output before it.
func (c *console) next(exited <-chan struct{}, limit time.Duration) (string, error) {
	deadline := time.After(limit)
	for {
		c.mu.Lock()
		rest := c.buf.Bytes()[c.read:]
		if i := bytes.Index(rest, []byte(prompt)); i >= 0 {
			c.read += i + len(prompt)
			c.mu.Unlock()
			return string(rest[:i]), nil
		}
		grown := c.grown
		c.mu.Unlock()
		select {
		case <-grown:
		case <-exited:
			return "", ErrExited
		case <-deadline:
			return "", fmt.Errorf("no prompt within %v", limit)
		}
	}
}
