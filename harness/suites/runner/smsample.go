package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/internal/ctl"
	"ibfab/nodeproc"
	"ibfab/wire/mad"
)

// SMState is one reading of the SMs' states: each SM node's SMInfo state
// ("Master", "Standby", …; "" when its port did not answer).
type SMState map[string]string

// Masters returns the SM nodes the reading finds Master, sorted.
func (s SMState) Masters() []string {
	var out []string
	for n, v := range s {
		if v == "Master" {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Master returns the one SM node the reading finds Master, "" when there
// is not exactly one.
func (s SMState) Master() string {
	if m := s.Masters(); len(m) == 1 {
		return m[0]
	}
	return ""
}

// SMSample is a reading of the SMs' states taken at At.
type SMSample struct {
	At     time.Time `json:"at"`
	States SMState   `json:"states"`
}

// SMInfoSampler reads the SMInfo of SMs at their ports' LIDs from one
// HCA, through its control socket's "mad" op, as a diagnostic tool would
// from that host: once (Take) or every period (Start, Stop).
type SMInfoSampler struct {
	fabric, from string
	// Timeout bounds each read (default 150 ms: below the 200 ms period
	// the issue samples at).
	Timeout time.Duration

	tid atomic.Uint64

	mu      sync.Mutex
	sms     map[string]uint16 // SM node → its port's LID
	samples []SMSample
	reread  int // reads taken again, not one Master at first
	stop    chan struct{}
	done    chan struct{}
}

// NewSMInfoSampler reads, from HCA from of fabric, the SMs whose ports
// have the LIDs sms gives by node.
func NewSMInfoSampler(fabric, from string, sms map[string]uint16) *SMInfoSampler {
	s := &SMInfoSampler{fabric: fabric, from: from, Timeout: 150 * time.Millisecond, sms: map[string]uint16{}}
	for n, l := range sms {
		s.sms[n] = l
	}
	s.tid.Store(0x5a3a << 32)
	return s
}

// Drop stops reading node's SM (its process is gone: the reads would only
// wait out their timeout).
func (s *SMInfoSampler) Drop(node string) {
	s.mu.Lock()
	delete(s.sms, node)
	s.mu.Unlock()
}

// State reads the state of the SM at lid; "" when it does not answer.
func (s *SMInfoSampler) State(lid uint16) string {
	b := mad.AppendSMP(nil, &mad.SMPFields{Method: mad.MethodGet, TransactionID: s.tid.Add(1), AttrID: mad.AttrSMInfo})
	var r nodeproc.ReceivedMAD
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeout+2*time.Second)
	defer cancel()
	err := ctl.Call(ctx, nodeproc.SocketPath(s.fabric, s.from), "mad",
		nodeproc.MADArgs{Port: 1, DLID: lid, MAD: b, TimeoutMS: int(s.Timeout / time.Millisecond)}, &r)
	if err != nil {
		return ""
	}
	m := mad.SMP(r.MAD)
	if !m.IsValid() || m.MAD().Status() != mad.StatusOK {
		return ""
	}
	return mad.SMInfo(m.Data()).SMState().String()
}

// Take reads every SM's state. A reading that finds other than one
// Master is taken again at once, up to twice: the reads of two SMs are
// not one instant, and a handover switches them one SMP apart; a state
// that persists over three readings is no such straddle.
func (s *SMInfoSampler) Take() SMSample {
	s.mu.Lock()
	sms := make(map[string]uint16, len(s.sms))
	for n, l := range s.sms {
		sms[n] = l
	}
	s.mu.Unlock()
	var smp SMSample
	for i := range 3 {
		smp = SMSample{At: time.Now(), States: SMState{}}
		for n, lid := range sms {
			smp.States[n] = s.State(lid)
		}
		if len(smp.States.Masters()) == 1 || i == 2 {
			break
		}
		s.mu.Lock()
		s.reread++
		s.mu.Unlock()
	}
	return smp
}

// Start takes a reading every period until Stop.
func (s *SMInfoSampler) Start(period time.Duration) {
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		tk := time.NewTicker(period)
		defer tk.Stop()
		for {
			smp := s.Take()
			s.mu.Lock()
			s.samples = append(s.samples, smp)
			s.mu.Unlock()
			select {
			case <-s.stop:
				return
			case <-tk.C:
			}
		}
	}()
}

// Stop ends the readings Start began and returns them all.
func (s *SMInfoSampler) Stop() []SMSample {
	if s.stop != nil {
		close(s.stop)
		<-s.done
		s.stop = nil
	}
	return s.Samples()
}

// Samples returns the readings so far.
func (s *SMInfoSampler) Samples() []SMSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SMSample(nil), s.samples...)
}

// Rereads is how many readings were taken again because they found other
// than one Master.
func (s *SMInfoSampler) Rereads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reread
}

// SMInfoAnswer is what `sminfo` printed: the SM it asked (the port's
// master SM LID) and the state that SM gave.
type SMInfoAnswer struct {
	LID      uint16 `json:"lid"`
	GUID     uint64 `json:"guid"`
	Priority int    `json:"priority"`
	State    string `json:"state"` // "SMINFO_MASTER", …
}

var sminfoRE = regexp.MustCompile(`sm lid (\d+) sm guid (0x[0-9a-fA-F]+), activity count \d+ priority (\d+) state \d+ (SMINFO_[A-Z]+)`)

// ParseSMInfo reads the line infiniband-diags' `sminfo` prints.
func ParseSMInfo(out string) (SMInfoAnswer, error) {
	m := sminfoRE.FindStringSubmatch(out)
	if m == nil {
		return SMInfoAnswer{}, fmt.Errorf("no sminfo answer in %q", LastLines(out, 2))
	}
	lid, err1 := strconv.ParseUint(m[1], 10, 16)
	guid, err2 := strconv.ParseUint(m[2], 0, 64)
	prio, err3 := strconv.Atoi(m[3])
	if err1 != nil || err2 != nil || err3 != nil {
		return SMInfoAnswer{}, fmt.Errorf("sminfo answer %q: bad number", m[0])
	}
	return SMInfoAnswer{LID: uint16(lid), GUID: guid, Priority: prio, State: m[4]}, nil
}

// RunSMInfo runs infiniband-diags' `sminfo` at HCA node of fabric, through
// its attach point (libumad2sim, as `ibfab exec --umad`), and returns its
// output. dir takes the sysfs tree libumad2sim makes, removed after.
func RunSMInfo(ctx context.Context, fabric, node, dir string) (string, error) {
	env, err := harness.UMADEnv("")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "sminfo")
	c.Env = append(os.Environ(), env...)
	c.Dir = dir
	var out lockedBuffer
	c.Stdout, c.Stderr = &out, &out
	if err := fabricnet.Do(fabricnet.Namespace(fabric, node), c.Start); err != nil {
		return "", fmt.Errorf("sminfo at %s: %w", node, err)
	}
	err = c.Wait()
	harness.RemoveUMADSysfs(dir, c.Process.Pid)
	if err != nil {
		return out.String(), fmt.Errorf("sminfo at %s: %w: %s", node, err, LastLines(out.String(), 2))
	}
	return out.String(), nil
}

// lockedBuffer is a buffer two writers (a command's stdout and stderr)
// share.
type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}
