package harness

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"ibfab/nodeproc"
	"ibfab/topologies"
)

// A link is paced in real time at its rate divided by the time scale, so
// a rate faster than the machine moves packets needs a scale: the machine
// limit is what one unpaced link carried here (ibfab bench fabric
// measures and records it), and the scale a rate needs follows from it.

// MachineLimit is what one unpaced link (two HCAs back to back, 2 KiB
// payloads) carried on this machine.
type MachineLimit struct {
	WireBps  float64   `json:"wire_bps"`
	Payload  int       `json:"payload_bytes"`
	Machine  string    `json:"machine"` // CPU model and count: a record of another machine is not used
	Measured time.Time `json:"measured"`
	By       string    `json:"by"`
}

// ErrNoMachineLimit is LoadMachineLimit's error when this machine's limit
// was never measured (or was measured on another machine).
var ErrNoMachineLimit = errors.New("this machine's unpaced limit was never measured (ibfab bench fabric --only unpaced measures it)")

// limitFile is where the limit is kept across fabrics and reboots;
// IBFAB_LIMIT_FILE names another (tests, users without /var/lib).
func limitFile() string {
	if f := os.Getenv("IBFAB_LIMIT_FILE"); f != "" {
		return f
	}
	return "/var/lib/ibfab/machine-limit.json"
}

// thisMachine names the machine as far as pacing cares: its CPU model and
// how many CPUs there are.
func thisMachine() string {
	model := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s × %d", model, runtime.NumCPU())
}

// SaveMachineLimit records what one unpaced link carried here.
func SaveMachineLimit(wireBps float64, payload int, by string) error {
	if !(wireBps > 0) {
		return fmt.Errorf("machine limit %v b/s: want a positive rate", wireBps)
	}
	l := MachineLimit{WireBps: wireBps, Payload: payload, Machine: thisMachine(), Measured: time.Now().UTC(), By: by}
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	f := limitFile()
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		return err
	}
	tmp := f + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, f)
}

// LoadMachineLimit reads this machine's recorded limit.
func LoadMachineLimit() (MachineLimit, error) {
	var l MachineLimit
	b, err := os.ReadFile(limitFile())
	if errors.Is(err, os.ErrNotExist) {
		return l, ErrNoMachineLimit
	}
	if err != nil {
		return l, err
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return l, fmt.Errorf("%s: %w", limitFile(), err)
	}
	if l.Machine != thisMachine() || !(l.WireBps > 0) {
		return l, ErrNoMachineLimit
	}
	return l, nil
}

// pacingHeadroom is how far below its unpaced limit the machine must run
// a link for paced goodput within 1 % of the rate: measured, a 4x SDR
// link whose limit was at time scale 1.58 (6.46) came within 1 % at 4
// (16) and not at 2 (8), so 2.5 times the limit's scale.
const pacingHeadroom = 2.5

// TimeScaleFor is the time scale a link of rateBps needs on a machine of
// limit l: the limit's scale with the headroom, rounded up to the next of
// 1, 1.5, 2, 3, 4, 6, 8, 12, … (at least 1).
func TimeScaleFor(rateBps uint64, l MachineLimit) float64 {
	need := float64(rateBps) / l.WireBps * pacingHeadroom
	s := 1.0
	for step := 0; s < need*(1-1e-9); step++ {
		if step%2 == 0 {
			s *= 1.5
		} else {
			s = s / 1.5 * 2
		}
	}
	return math.Round(s*1e6) / 1e6
}

// FastestLink returns t's fastest link rate in bits/s and its name
// ("4xNDR").
func FastestLink(t *topologies.Topology) (uint64, string, error) {
	var best uint64
	var name string
	for _, l := range t.Links() {
		r, err := nodeproc.LinkDataRate(l)
		if err != nil {
			return 0, "", err
		}
		if r > best {
			best, name = r, topologies.Rate{Width: orDefault(l.Width, topologies.DefaultWidth), Speed: orDefault(l.Speed, topologies.DefaultSpeed)}.String()
		}
	}
	return best, name, nil
}

func orDefault[T comparable](v, d T) T {
	var zero T
	if v == zero {
		return d
	}
	return v
}
