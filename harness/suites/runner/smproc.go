package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/sm"
)

// SMResult is one line ibsm printed: a sweep or an assimilation, with the
// time the harness read it.
type SMResult struct {
	At time.Time `json:"at"`
	// Trigger is what started the sweep or assimilation, in the words of
	// both SMs: ibsm's triggers (sm.Trigger) and OpenSM's "start", its
	// first sweep. It hides sm.Result's, in Go and in JSON.
	Trigger string `json:"trigger,omitempty"`
	sm.Result
}

// SMProc is one subnet manager process in an HCA's namespace: ibsm, its
// JSON lines parsed as they come, or OpenSM, its log read as it grows
// (opensm.go).
type SMProc struct {
	kind     SMKind
	cmd      *exec.Cmd
	node     string
	log      io.Writer
	onResult func(SMResult) // sees each result as it is read

	mu      sync.Mutex
	results []SMResult
	qos     []sm.QoSEvent   // ibsm's QoS decisions (event "qos")
	ccLogs  []sm.CCLogEvent // CongestionLog entries ibsm read (event "cc_log"), the first maxCCLogs
	states  []sm.SMEvent    // ibsm's state changes and SMInfo exchanges (event "sm")
	stateAt []time.Time     // when each of states was read
	stderr  bytes.Buffer
	done    chan struct{}
	err     error
}

// Kind is which subnet manager p runs.
func (p *SMProc) Kind() SMKind { return p.kind }

// PID is the SM process's ID: what a soak reads its memory and file
// descriptors by.
func (p *SMProc) PID() int { return p.cmd.Process.Pid }

// Done is closed when p's process has exited and its output is read.
func (p *SMProc) Done() <-chan struct{} { return p.done }

// SMBinary finds ibsm as the harness finds the node programs: in
// $IBFAB_BIN, next to the running executable, or on PATH.
func SMBinary() (string, error) {
	var dirs []string
	if d := os.Getenv(harness.BinEnv); d != "" {
		dirs = append(dirs, d)
	}
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe))
	}
	for _, d := range dirs {
		p := filepath.Join(d, "ibsm")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath("ibsm"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("ibsm not found next to ibfab, in $%s or on PATH (make build puts it in bin/)", harness.BinEnv)
}

// StartIbsm runs `ibsm --port sim --json ARGS` in node's namespace of fabric.
// Every line it prints also goes to log, when set, and each result to
// onResult.
func StartIbsm(fabric, node string, args []string, log io.Writer, onResult func(SMResult)) (*SMProc, error) {
	bin, err := SMBinary()
	if err != nil {
		return nil, err
	}
	argv := append([]string{"--port", "sim", "--json"}, args...)
	p := &SMProc{kind: SMIbsm, cmd: exec.Command(bin, argv...), node: node, log: log, onResult: onResult, done: make(chan struct{})}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.stderr}
	if err := fabricnet.Do(fabricnet.Namespace(fabric, node), p.cmd.Start); err != nil {
		return nil, fmt.Errorf("starting ibsm in %s: %w", node, err)
	}
	go p.read(out)
	return p, nil
}

// IbsmHCAArgs are the flags of the HCA ibsm attaches to, for ibsm's flags
// args. The attach point hands an SMP back as timed out after its own
// timeout (200 ms, OpenSM's), and ibsm then resends it at once: unless
// that timeout is ibsm's (--timeout), every SMP answered later than 200 ms
// is lost whatever ibsm waits for, and under traffic on a machine of two
// cores the round trips of a 32-switch fabric can take longer.
func IbsmHCAArgs(args []string) []string {
	t := sm.DefaultTimeout.String()
	for i, a := range args {
		name, v, hasV := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case name != "timeout" || !strings.HasPrefix(a, "-"):
		case hasV:
			t = v
		case i+1 < len(args):
			t = args[i+1]
		}
	}
	return []string{"--sim-timeout", t}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (p *SMProc) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if p.log != nil {
			p.mu.Lock()
			fmt.Fprintf(p.log, "%s\n", line)
			p.mu.Unlock()
		}
		if p.event(line) {
			continue
		}
		var res SMResult
		if err := json.Unmarshal(line, &res); err == nil {
			res.At = time.Now()
			p.add(res)
		}
	}
	p.err = p.cmd.Wait()
	close(p.done)
}

// maxCCLogs bounds the cc_log events kept: a congested fabric logs
// thousands over a run.
const maxCCLogs = 4096

// event keeps one of ibsm's events ("qos", "cc_log", "sm"; "ar" is only
// recognised: the suites read its outcome from the control call), and reports
// whether line was one; results carry an event field too, naming the
// sweep or assimilation.
func (p *SMProc) event(line []byte) bool {
	var head struct {
		Event string `json:"event"`
	}
	if json.Unmarshal(line, &head) != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch head.Event {
	case "qos":
		var ev sm.QoSEvent
		if json.Unmarshal(line, &ev) == nil {
			p.qos = append(p.qos, ev)
		}
	case "cc_log":
		var ev sm.CCLogEvent
		if json.Unmarshal(line, &ev) == nil && len(p.ccLogs) < maxCCLogs {
			p.ccLogs = append(p.ccLogs, ev)
		}
	case "sm":
		var ev sm.SMEvent
		if json.Unmarshal(line, &ev) == nil {
			p.states = append(p.states, ev)
			p.stateAt = append(p.stateAt, time.Now())
		}
	case "ar":
	default:
		return false // a result: its event names the sweep or assimilation
	}
	return true
}

// SMEvents returns ibsm's SM state events so far (election, handover,
// polling timeout, …).
func (p *SMProc) SMEvents() []sm.SMEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]sm.SMEvent(nil), p.states...)
}

// SMEventsAt returns ibsm's SM state events so far and when each was
// read.
func (p *SMProc) SMEventsAt() ([]sm.SMEvent, []time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]sm.SMEvent(nil), p.states...), append([]time.Time(nil), p.stateAt...)
}

// CCLogEvents returns the CongestionLog entries ibsm reported so far (at
// most maxCCLogs).
func (p *SMProc) CCLogEvents() []sm.CCLogEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]sm.CCLogEvent(nil), p.ccLogs...)
}

// add keeps a result and shows it to onResult.
func (p *SMProc) add(res SMResult) {
	p.mu.Lock()
	p.results = append(p.results, res)
	p.mu.Unlock()
	if p.onResult != nil {
		p.onResult(res)
	}
}

// Results returns the results read so far.
func (p *SMProc) Results() []SMResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]SMResult(nil), p.results...)
}

// QoSEvents returns ibsm's QoS decisions read so far.
func (p *SMProc) QoSEvents() []sm.QoSEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]sm.QoSEvent(nil), p.qos...)
}

// Stderr returns what the SM wrote to stderr so far (OpenSM: and stdout).
func (p *SMProc) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// Alive reports whether the process still runs.
func (p *SMProc) Alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Kill ends the SM with SIGKILL, as a crash would, and waits for it.
func (p *SMProc) Kill() {
	if p.Alive() {
		p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.done
}

// Stop ends the SM with SIGTERM (SIGKILL after 5 s) and waits for it.
func (p *SMProc) Stop() {
	if !p.Alive() {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.Kill()
	}
}

// waitResult waits until the SM has reported a result after index from
// for which ok holds, and returns it and its index.
func (p *SMProc) WaitResult(from int, timeout time.Duration, ok func(SMResult) bool) (SMResult, int, error) {
	deadline := time.Now().Add(timeout)
	for {
		rs := p.Results()
		for i := from; i < len(rs); i++ {
			if ok(rs[i]) {
				return rs[i], i, nil
			}
		}
		if !p.Alive() {
			return SMResult{}, 0, fmt.Errorf("%s exited (%v): %s", p.kind, p.err, LastLines(p.Stderr(), 5))
		}
		if time.Now().After(deadline) {
			return SMResult{}, 0, fmt.Errorf("no such %s result after %v (%d results read)", p.kind, timeout, len(rs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func LastLines(s string, n int) string {
	lines := bytes.Split(bytes.TrimSpace([]byte(s)), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte(" | ")))
}
