package opensmrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"ibfab/fabricnet"
)

// Options say where and how OpenSM runs.
type Options struct {
	// NS is the network namespace OpenSM runs in.
	NS string
	// Env is added to OpenSM's environment: LD_PRELOAD of libumad2sim
	// and, for an ibfab HCA, IBSIM_SOCKNAME.
	Env []string
	// Dir receives the log (opensm.log) and is OpenSM's cache and dump
	// directory: a fresh one per run, so that no run inherits another's
	// GUID-to-LID cache.
	Dir string
	// Args are more OpenSM arguments (-R ENGINE, say).
	Args []string
}

// Result is one run.
type Result struct {
	// MsToUp is from the exec of OpenSM to the time stamp of its SUBNET
	// UP log line.
	MsToUp float64 `json:"ms_to_up"`
	// MsSweep is OpenSM's own account: its log from "Entering
	// DISCOVERING state" to "SUBNET UP".
	MsSweep float64 `json:"ms_sweep"`
	// MsProcess is from the exec to OpenSM's exit.
	MsProcess float64 `json:"ms_process"`
	// CPUMs is OpenSM's CPU time, user and system.
	CPUMs float64 `json:"cpu_ms"`
	// Log is the path of OpenSM's log.
	Log string `json:"-"`
}

// Run runs name with args in namespace ns, with env added to its
// environment, and returns its standard output; its standard error goes
// into the error when it fails. perfquery, say.
func Run(ctx context.Context, ns string, env []string, name string, args ...string) ([]byte, error) {
	c := command(ctx, ns, env, name, args...)
	var out, stderr strings.Builder
	c.Stdout, c.Stderr = &out, &stderr
	if err := run(c, ns); err != nil {
		return []byte(out.String()), fmt.Errorf("%s: %w: %s", strings.Join(c.Args, " "), err, stderr.String())
	}
	return []byte(out.String()), nil
}

func command(ctx context.Context, ns string, env []string, name string, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, name, args...)
	c.Env = append(os.Environ(), env...)
	return c
}

// run starts c from a thread inside namespace ns, so that it is born
// there (no ip netns exec in between to time), and waits for it.
func run(c *exec.Cmd, ns string) error {
	if err := fabricnet.Do(ns, c.Start); err != nil {
		return err
	}
	return c.Wait()
}

// Once runs opensm --once and reads its times from its log.
func Once(ctx context.Context, o Options) (*Result, error) {
	log := filepath.Join(o.Dir, "opensm.log")
	env := append(append([]string(nil), o.Env...), "OSM_CACHE_DIR="+o.Dir, "OSM_TMP_DIR="+o.Dir)
	args := append([]string{"--once", "-f", log}, o.Args...)
	c := command(ctx, o.NS, env, "opensm", args...)
	// libumad2sim makes a sysfs tree (sys-PID) in the working directory.
	c.Dir = o.Dir
	var out strings.Builder
	c.Stdout, c.Stderr = &out, &out
	start := time.Now()
	err := run(c, o.NS)
	r := &Result{MsProcess: ms(time.Since(start)), Log: log}
	if c.ProcessState != nil {
		r.CPUMs = ms(c.ProcessState.UserTime() + c.ProcessState.SystemTime())
	}
	if err != nil {
		return nil, fmt.Errorf("opensm: %w: %s", err, out.String())
	}
	b, err := os.ReadFile(log)
	if err != nil {
		return nil, fmt.Errorf("opensm: %w: %s", err, out.String())
	}
	disc, up, err := LogTimes(string(b), start)
	if err != nil {
		return nil, fmt.Errorf("opensm: %w: %s", err, out.String())
	}
	r.MsToUp, r.MsSweep = ms(up.Sub(start)), ms(up.Sub(disc))
	return r, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// LogTimes finds the times of the first "Entering DISCOVERING state" and
// "SUBNET UP" in an OpenSM log, whose lines start with a local time
// without a year, and microseconds: "Nov 22 02:38:11 865218 [TID] …".
// The year is the one of start, or the one next to it that puts the line
// within half a year of start (a run across New Year).
func LogTimes(log string, start time.Time) (disc, up time.Time, err error) {
	for _, line := range strings.Split(log, "\n") {
		var at *time.Time
		switch {
		case strings.HasSuffix(line, "-> Entering DISCOVERING state") && disc.IsZero():
			at = &disc
		case strings.HasSuffix(line, "-> SUBNET UP") && up.IsZero():
			at = &up
		default:
			continue
		}
		t, err := LineTime(line, start)
		if err != nil {
			return disc, up, err
		}
		*at = t
	}
	if disc.IsZero() || up.IsZero() {
		return disc, up, errors.New("no \"Entering DISCOVERING state\" and \"SUBNET UP\" in the log")
	}
	return disc, up, nil
}

// LineTime returns the time stamp of an OpenSM log line ("Nov 22
// 02:38:11 865218 [TID] …"), its year chosen as LogTimes does.
func LineTime(line string, start time.Time) (time.Time, error) {
	f := strings.Fields(line)
	if len(f) < 4 {
		return time.Time{}, fmt.Errorf("log line %q has no time", line)
	}
	t, err := time.ParseInLocation("2006 Jan 2 15:04:05", fmt.Sprintf("%d %s %s %s", start.Year(), f[0], f[1], f[2]), time.Local)
	us, err2 := strconv.Atoi(f[3])
	if err != nil || err2 != nil || us < 0 || us > 999999 {
		return time.Time{}, fmt.Errorf("log line %q: bad time", line)
	}
	switch half := 183 * 24 * time.Hour; {
	case t.Sub(start) > half:
		t = t.AddDate(-1, 0, 0)
	case start.Sub(t) > half:
		t = t.AddDate(1, 0, 0)
	}
	return t.Add(time.Duration(us) * time.Microsecond), nil
}

// PerfCounter reads one counter from perfquery's output
// ("PortXmitPkts:....................371").
func PerfCounter(out []byte, counter string) (uint64, error) {
	for _, line := range strings.Split(string(out), "\n") {
		rest, ok := strings.CutPrefix(line, counter+":")
		if !ok {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimLeft(rest, "."), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("perfquery: %q: %w", line, err)
		}
		return v, nil
	}
	return 0, fmt.Errorf("perfquery printed no %s:\n%s", counter, out)
}

// FrameCounts counts the SMP requests OpenSM sent by method and attribute
// ("SubnGet(NodeInfo)": 19), from a log written with its FRAMES debug flag
// (-D 0x20, which dumps every SMP sent and received); a request whose
// attribute modifier has bit 31 set (PortInfo's extended-speed form) is
// counted apart, with " am31" added to its key. local counts those that
// went no further than the SM's own node (directed route, no hops).
// Responses are not counted.
func FrameCounts(log string) (counts map[string]int, local int) {
	counts = map[string]int{}
	dumps := strings.Split(log, "-> SMP dump:")
	for _, d := range dumps[1:] {
		method, attr, hops := dumpField(d, "method"), dumpField(d, "attr_id"), dumpField(d, "hop_count")
		if method == "" || attr == "" || !strings.HasPrefix(method, "(Subn") || strings.HasSuffix(method, "Resp)") {
			continue
		}
		key := strings.Trim(method, "()") + attr
		if am, err := strconv.ParseUint(dumpField(d, "attr_mod"), 0, 32); err == nil && am&(1<<31) != 0 {
			key += " am31"
		}
		counts[key]++
		if hops == "0x0" {
			local++
		}
	}
	return counts, local
}

// dumpField returns what follows "name.....value " in one SMP dump: the
// name in parentheses when there is one ("(NodeInfo)"), else the value.
func dumpField(dump, name string) string {
	for _, line := range strings.Split(dump, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), name+".")
		if !ok {
			continue
		}
		f := strings.Fields(strings.TrimLeft(rest, "."))
		switch len(f) {
		case 0:
			return ""
		case 1:
			return f[0]
		}
		return f[1]
	}
	return ""
}

// Daemon is OpenSM running as a daemon (not --once) in a namespace, its
// log flushed line by line so that its SUBNET UP lines can be read as they
// come (by default the log is buffered until exit).
type Daemon struct {
	Log  string // the log's path
	cmd  *exec.Cmd
	out  strings.Builder
	done chan struct{}
	err  error // after done
}

// StartDaemon starts OpenSM in o.NS with o.Env and o.Args, its log, cache
// and libumad2sim's sysfs tree in o.Dir.
func StartDaemon(o Options) (*Daemon, error) {
	conf := filepath.Join(o.Dir, "opensm.conf")
	if err := os.WriteFile(conf, []byte("force_log_flush TRUE\n"), 0o644); err != nil {
		return nil, err
	}
	d := &Daemon{Log: filepath.Join(o.Dir, "opensm.log"), done: make(chan struct{})}
	env := append(append([]string(nil), o.Env...), "OSM_CACHE_DIR="+o.Dir, "OSM_TMP_DIR="+o.Dir)
	d.cmd = command(context.Background(), o.NS, env, "opensm", append([]string{"-F", conf, "-f", d.Log}, o.Args...)...)
	d.cmd.Dir = o.Dir
	d.cmd.Stdout, d.cmd.Stderr = &d.out, &d.out
	if err := fabricnet.Do(o.NS, d.cmd.Start); err != nil {
		return nil, fmt.Errorf("opensm: %w", err)
	}
	go func() {
		d.err = d.cmd.Wait()
		close(d.done)
	}()
	return d, nil
}

// LogText returns the log from byte offset from on.
func (d *Daemon) LogText(from int) (string, error) {
	b, err := os.ReadFile(d.Log)
	if os.IsNotExist(err) || from > len(b) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return string(b[from:]), nil
}

// Exited reports whether OpenSM has exited, with its error.
func (d *Daemon) Exited() (bool, error) {
	select {
	case <-d.done:
		return true, fmt.Errorf("opensm exited: %v: %s", d.err, d.out.String())
	default:
		return false, nil
	}
}

// Stop ends OpenSM: SIGTERM, SIGKILL after 5 s.
func (d *Daemon) Stop() {
	if exited, _ := d.Exited(); exited {
		return
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(5 * time.Second):
		d.cmd.Process.Kill()
		<-d.done
	}
}
