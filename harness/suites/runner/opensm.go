package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/internal/ctl"
	"ibfab/internal/enum"
	"ibfab/internal/opensmrun"
	"ibfab/nodeproc"
	"ibfab/sm"
)

//go:generate go tool stringer -type=SMKind -linecomment

// SMKind is a subnet manager a suite can run.
type SMKind uint8

// The subnet managers a suite can run.
const (
	SMIbsm   SMKind = iota // ibsm
	SMOpenSM               // opensm
)

// "" is ibsm, as when the kind was a string.
var smKinds = enum.New("SM", SMIbsm, SMOpenSM).EmptyIsZero()

// MarshalText implements encoding.TextMarshaler.
func (k SMKind) MarshalText() ([]byte, error) { return smKinds.Marshal(k) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *SMKind) UnmarshalText(b []byte) error { return smKinds.Unmarshal(k, b) }

// OpenSMLogLevel is the log level OpenSM runs with: errors, info and
// verbose (-D 0x07). Verbose adds the state manager's message boxes
// ("INITIATING HEAVY SWEEP", "LID ASSIGNMENT COMPLETE - …", "SUBNET UP"),
// which time the phases of each heavy sweep. Frame dumps (0x20) would
// count SMPs per phase, but writing them, flushed line by line, slows a
// sweep down as much as the sweep itself takes.
const OpenSMLogLevel = "0x07"

// OpenSMRetries is how often the SM's HCA resends an SMP of OpenSM's that
// got no answer: OpenSM's default transaction_retries. On hardware the
// kernel's MAD layer resends; libumad2sim does not pass the number on, and
// without resends OpenSM drops a node whose NodeInfo was lost from the
// sweep and may declare a subnet of the nodes it reached up (seen with 10 %
// VL15 loss: SUBNET UP with one node, every other port left in Init).
const OpenSMRetries = 3

// osmPhases maps the message boxes OpenSM's state manager logs in a heavy
// sweep to the phase each one starts ("" ends the sweep); a box not listed
// here continues the phase in progress. OpenSM computes and sends the
// unicast tables in one step, "unicast-tables".
var osmPhases = map[string]string{
	"INITIATING HEAVY SWEEP":                                 "discovery",
	"HEAVY SWEEP COMPLETE":                                   "lid-assignment",
	"LID ASSIGNMENT COMPLETE - STARTING SWITCH TABLE CONFIG": "unicast-tables",
	"SWITCHES CONFIGURED FOR UNICAST":                        "multicast",
	"SWITCHES CONFIGURED FOR MULTICAST":                      "alias-guids",
	"ALIAS GUIDS CONFIGURED":                                 "port-config",
	"LINKS PORTS CONFIGURED - SET LINKS TO ARMED STATE":      "arm",
	"LINKS ARMED - SET LINKS TO ACTIVE STATE":                "activation",
	"SUBNET UP":                    "",
	"ERRORS DURING INITIALIZATION": "",
}

// osmSweep is one heavy sweep read from OpenSM's log.
type osmSweep struct {
	Begin, End time.Time
	Up         bool
	Reason     string
	Trigger    string // "start", "trap" (a trap arrived since the last) or "sweep"
	N          int    // 1 for the first sweep read
	Traps      []string
	Phases     []sm.Phase // times only
}

// osmLog reads OpenSM's log as it grows and returns the heavy sweeps it
// finished. Lines start with a time stamp; a message box's lines (the
// banner of a state change) do not, and take the time of the line before.
type osmLog struct {
	start   time.Time // the year of the time stamps
	partial string    // an unfinished last line
	at      time.Time // the last time stamp
	cur     *osmSweep
	phase   string    // in progress in cur
	since   time.Time // its start
	traps   []string  // received since the last sweep ended
	sweeps  int
	bad     int // lines whose time stamp did not parse
}

// feed reads more of the log and returns the sweeps that ended in it.
func (l *osmLog) feed(text string) []osmSweep {
	text = l.partial + text
	i := strings.LastIndexByte(text, '\n')
	if i < 0 {
		l.partial = text
		return nil
	}
	l.partial = text[i+1:]
	var out []osmSweep
	for _, line := range strings.Split(text[:i], "\n") {
		if s, ok := l.line(line); ok {
			out = append(out, s)
		}
	}
	return out
}

// line reads one line; ok when it ended a sweep.
func (l *osmLog) line(line string) (osmSweep, bool) {
	var box string
	if strings.HasPrefix(line, "*") {
		box = strings.TrimSpace(strings.Trim(line, "* "))
	} else {
		if len(line) < 16 || line[0] < 'A' || line[0] > 'Z' {
			return osmSweep{}, false // a continuation of a multi-line message
		}
		t, err := opensmrun.LineTime(line, l.start)
		if err != nil {
			l.bad++
			return osmSweep{}, false
		}
		l.at = t
		_, msg, _ := strings.Cut(line, "-> ")
		switch {
		case strings.HasPrefix(msg, "log_trap_info: Received Generic Notice"):
			num := "trap"
			for _, w := range strings.Fields(msg) {
				if n, ok := strings.CutPrefix(w, "num:"); ok {
					num = "trap " + n
				}
			}
			l.traps = append(l.traps, num)
			return osmSweep{}, false
		case msg == "SUBNET UP":
			// The info line before the box: the end even without
			// verbose logging.
			box = msg
		default:
			return osmSweep{}, false
		}
	}
	next, known := osmPhases[box]
	if !known {
		return osmSweep{}, false
	}
	if box == "INITIATING HEAVY SWEEP" && l.cur == nil {
		trigger := "sweep"
		switch {
		case l.sweeps == 0:
			trigger = "start"
		case len(l.traps) > 0:
			trigger = "trap"
		}
		l.cur = &osmSweep{Begin: l.at, Trigger: trigger, Traps: l.traps}
		l.traps = nil
		l.phase, l.since = next, l.at
		return osmSweep{}, false
	}
	if l.cur == nil {
		return osmSweep{}, false // the box after the info line, or a sweep begun before the log was read
	}
	l.endPhase()
	if next != "" {
		l.phase, l.since = next, l.at
		return osmSweep{}, false
	}
	s := *l.cur
	s.End, s.Up = l.at, box == "SUBNET UP"
	if !s.Up {
		s.Reason = "OpenSM: errors during initialization"
	}
	l.cur, l.phase = nil, ""
	l.sweeps++
	s.N = l.sweeps
	return s, true
}

// endPhase adds the phase in progress to the sweep; a phase met again (a
// discovery OpenSM repeats because a trap came in) adds up.
func (l *osmLog) endPhase() {
	ms := float64(l.at.Sub(l.since).Microseconds()) / 1000
	for i := range l.cur.Phases {
		if l.cur.Phases[i].Name == l.phase {
			l.cur.Phases[i].Ms += ms
			return
		}
	}
	l.cur.Phases = append(l.cur.Phases, sm.Phase{Name: l.phase, Ms: ms})
}

// madCount is the SM HCA's count of MADs its clients sent, read at a time
// between From and To.
type madCount struct {
	From, To time.Time
	N        uint64
}

// smpsBetween is the MADs sent from the last read before begin to the
// first one after end; ok false when no read brackets them.
func smpsBetween(cs []madCount, begin, end time.Time) (uint64, bool) {
	a, b := -1, -1
	for i, c := range cs {
		if !c.To.After(begin) {
			a = i
		}
		if b < 0 && !c.From.Before(end) {
			b = i
		}
	}
	if a < 0 || b < 0 || cs[b].N < cs[a].N {
		return 0, false
	}
	return cs[b].N - cs[a].N, true
}

// opensmConf writes OpenSM's configuration to dir (the log flushed line by
// line: by default OpenSM buffers it until exit in daemon mode).
func opensmConf(dir, extra string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	conf := filepath.Join(dir, "opensm.conf")
	return conf, os.WriteFile(conf, []byte("force_log_flush TRUE\n"+extra), 0o644)
}

// StartOpenSM runs Debian's OpenSM as a daemon at node's HCA (libumad2sim
// preloaded, as `ibfab exec --umad` does), its cache, log and the sysfs
// tree libumad2sim makes in dir. A restart in the same dir finds the
// GUID-to-LID cache of the OpenSM before it, as a restarted daemon would.
// Its log is read as it grows: each heavy sweep is a result, its SMPs the
// MADs the HCA's attach point received from it meanwhile.
func StartOpenSM(fabric, node, dir, extraConf string, args []string, onResult func(SMResult)) (*SMProc, error) {
	conf, err := opensmConf(dir, extraConf)
	if err != nil {
		return nil, err
	}
	env, err := harness.UMADEnv("")
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "opensm.log")
	argv := append([]string{"-F", conf, "-f", logPath, "-D", OpenSMLogLevel}, args...)
	p := &SMProc{kind: SMOpenSM, node: node, onResult: onResult, done: make(chan struct{})}
	p.cmd = exec.Command("opensm", argv...)
	p.cmd.Env = append(append(os.Environ(), env...), "OSM_CACHE_DIR="+dir, "OSM_TMP_DIR="+dir)
	p.cmd.Dir = dir
	p.cmd.Stdout = &lockedWriter{mu: &p.mu, w: &p.stderr}
	p.cmd.Stderr = p.cmd.Stdout
	// A log left by an OpenSM before this one is read from its end.
	var from int64
	if st, err := os.Stat(logPath); err == nil {
		from = st.Size()
	}
	start := time.Now()
	if err := fabricnet.Do(fabricnet.Namespace(fabric, node), p.cmd.Start); err != nil {
		return nil, fmt.Errorf("starting opensm in %s: %w", node, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		harness.RemoveUMADSysfs(dir, p.cmd.Process.Pid)
		close(p.done)
	}()
	go p.follow(fabric, logPath, from, start)
	return p, nil
}

// follow reads OpenSM's log every 50 ms, and the SM HCA's MAD count,
// until OpenSM has exited; each heavy sweep becomes a result once a count
// read after its end is in.
func (p *SMProc) follow(fabric, logPath string, from int64, start time.Time) {
	l := &osmLog{start: start}
	var counts []madCount
	var pending []osmSweep
	sock := nodeproc.SocketPath(fabric, p.node)
	read := func() {
		t0 := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var st nodeproc.Status
		if err := ctl.Call(ctx, sock, "status", nil, &st); err == nil && st.Sim != nil {
			counts = append(counts, madCount{From: t0, To: time.Now(), N: st.Sim.MADsIn})
		}
		cancel()
		if f, err := os.Open(logPath); err == nil {
			if _, err := f.Seek(from, io.SeekStart); err == nil {
				b, _ := io.ReadAll(f)
				from += int64(len(b))
				pending = append(pending, l.feed(string(b))...)
			}
			f.Close()
		}
		for len(pending) > 0 {
			s := pending[0]
			n, ok := smpsBetween(counts, s.Begin, s.End)
			if !ok && p.Alive() && time.Since(s.End) < 5*time.Second {
				break // wait for a count after its end
			}
			pending = pending[1:]
			p.add(osmResult(s, n, ok))
		}
	}
	for p.Alive() {
		read()
		select {
		case <-p.done:
		case <-time.After(50 * time.Millisecond):
		}
	}
	read()
}

// osmResult is a heavy sweep as a result like ibsm's.
func osmResult(s osmSweep, smps uint64, counted bool) SMResult {
	event := "heavy-sweep"
	if s.Trigger == "start" {
		event = "sweep"
	}
	x := SMResult{At: s.End, Trigger: s.Trigger, Result: sm.Result{Event: event, SubnetUp: s.Up, Reason: s.Reason, Phases: s.Phases,
		MsTotal: float64(s.End.Sub(s.Begin).Microseconds()) / 1000, SMPsTotal: smps, Sweep: s.N, Changes: s.Traps}}
	if !counted {
		x.Warnings = append(x.Warnings, "SMPs not counted: no status read of the SM's HCA around the sweep")
	}
	return x
}

// opensmDiag says, for a run with OpenSM that was not restored, what its
// log shows since end: its last heavy sweep, the traps it got, the SMPs
// that timed out and the traps it ignored as noisy ("" for ibsm).
func (r *SuiteRun) opensmDiag(end time.Time) string {
	if r.smKind() != SMOpenSM {
		return ""
	}
	var sweeps, traps int
	last := "none"
	for _, x := range r.SM().Results() {
		if x.At.After(end) {
			sweeps++
			traps += len(x.Changes)
			last = fmt.Sprintf("%.1f s after the last step (%s, up %v)", x.At.Sub(end).Seconds(), x.Trigger, x.SubnetUp)
		}
	}
	b, _ := os.ReadFile(filepath.Join(r.smDir, "opensm.log"))
	log := string(b)
	return fmt.Sprintf("; OpenSM since the last step: %d heavy sweeps (last %s) on %d traps; whole log: %d SMP timeouts (ERR 3120), %d noisy traps ignored, %d light sweeps",
		sweeps, last, traps, strings.Count(log, "ERR 3120"), strings.Count(log, "Ignoring noisy traps"), strings.Count(log, "LIGHT SWEEP COMPLETE"))
}
