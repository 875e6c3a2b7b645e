package bpf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

// FSRoot is where bpffs is mounted.
const FSRoot = "/sys/fs/bpf"

// Names of the pinned objects in an Attachment's directory.
const (
	pinLink     = "link"
	pinRules    = "rules"
	pinCounters = "counters"
	pinEDT      = "edt"
)

// Direction is the TCX hook: what the device receives or sends.
type Direction uint8

// Directions.
const (
	Egress Direction = iota
	Ingress
)

// String returns "egress" or "ingress".
func (d Direction) String() string {
	if d == Ingress {
		return "ingress"
	}
	return "egress"
}

func (d Direction) attachType() ebpf.AttachType {
	if d == Ingress {
		return ebpf.AttachTCXIngress
	}
	return ebpf.AttachTCXEgress
}

// Counters are a rule's counts: frames it matched, and of those the ones
// it acted on.
type Counters struct {
	Matched uint64 `json:"matched"`
	Acted   uint64 `json:"acted"`
}

// Entry is an installed rule: its slot, the rule and its counters.
type Entry struct {
	Slot     int
	Rule     Rule
	Counters Counters
}

// Attachment is one fault program attached to one device, its link and
// maps pinned in Dir.
type Attachment struct {
	Dir      string
	link     link.Link
	rules    *ebpf.Map
	counters *ebpf.Map
}

var memlockOnce sync.Once

// Attach loads the fault program with empty rules, attaches it to the
// device with index ifindex in direction d and pins link and maps in dir,
// which it creates (bpffs must be mounted: MountFS). It must run on a
// thread in the device's network namespace: TCX resolves ifindex there.
// The program stays attached after the Attachment is closed, until the
// pins are removed.
func Attach(dir string, ifindex int, d Direction) (_ *Attachment, err error) {
	// Kernels before 5.11 charge BPF memory to RLIMIT_MEMLOCK.
	memlockOnce.Do(func() { _ = rlimit.RemoveMemlock() })
	var objs faultObjects
	if err := loadFaultObjects(&objs, nil); err != nil {
		return nil, fmt.Errorf("loading the fault program: %w", err)
	}
	defer objs.Fault.Close()
	a := &Attachment{Dir: dir, rules: objs.Rules, counters: objs.Counters}
	defer objs.Edt.Close()
	defer func() {
		if err != nil {
			a.Close()
			err = errors.Join(err, os.RemoveAll(dir))
		}
	}()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for _, p := range []struct {
		m    *ebpf.Map
		name string
	}{{objs.Rules, pinRules}, {objs.Counters, pinCounters}, {objs.Edt, pinEDT}} {
		if err := p.m.Pin(filepath.Join(dir, p.name)); err != nil {
			return nil, fmt.Errorf("pinning map %s: %w", p.name, err)
		}
	}
	if a.link, err = link.AttachTCX(link.TCXOptions{Interface: ifindex, Program: objs.Fault, Attach: d.attachType()}); err != nil {
		return nil, fmt.Errorf("attaching to ifindex %d %v: %w", ifindex, d, err)
	}
	if err := a.link.Pin(filepath.Join(dir, pinLink)); err != nil {
		// Unpinned, the link goes with its last descriptor.
		return nil, fmt.Errorf("pinning link: %w", err)
	}
	return a, nil
}

// Open opens the Attachment pinned in dir.
func Open(dir string) (_ *Attachment, err error) {
	a := &Attachment{Dir: dir}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	if a.link, err = link.LoadPinnedLink(filepath.Join(dir, pinLink), nil); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if a.rules, err = ebpf.LoadPinnedMap(filepath.Join(dir, pinRules), nil); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if a.counters, err = ebpf.LoadPinnedMap(filepath.Join(dir, pinCounters), nil); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return a, nil
}

// Ifindex returns the index of the device the program is attached to, and
// false when that device is gone (the link is defunct).
func (a *Attachment) Ifindex() (int, bool) {
	info, err := a.link.Info()
	if err != nil {
		return 0, false
	}
	tcx := info.TCX()
	if tcx == nil || tcx.Ifindex == 0 {
		return 0, false
	}
	return int(tcx.Ifindex), true
}

// Add installs r in the first free slot, with zero counters, and returns
// the slot.
func (a *Attachment) Add(r Rule) (int, error) {
	if err := r.Validate(); err != nil {
		return 0, err
	}
	for slot := range MaxRules {
		var cur faultRule
		if err := a.rules.Lookup(uint32(slot), &cur); err != nil {
			return 0, err
		}
		if cur.Action != 0 {
			continue
		}
		// Counters first: the program reads them once the rule is there.
		if err := a.counters.Update(uint32(slot), faultRuleStats{}, ebpf.UpdateAny); err != nil {
			return 0, err
		}
		if err := a.rules.Update(uint32(slot), r.encode(), ebpf.UpdateAny); err != nil {
			return 0, err
		}
		return slot, nil
	}
	return 0, fmt.Errorf("%s: all %d rule slots in use", a.Dir, MaxRules)
}

// Remove frees a slot; its rule stops at once.
func (a *Attachment) Remove(slot int) error {
	if slot < 0 || slot >= MaxRules {
		return fmt.Errorf("slot %d: want 0-%d", slot, MaxRules-1)
	}
	return a.rules.Update(uint32(slot), faultRule{}, ebpf.UpdateAny)
}

// List returns the installed rules, by slot, with their counters.
func (a *Attachment) List() ([]Entry, error) {
	var out []Entry
	for slot := range MaxRules {
		var r faultRule
		if err := a.rules.Lookup(uint32(slot), &r); err != nil {
			return nil, err
		}
		if r.Action == 0 {
			continue
		}
		var s faultRuleStats
		if err := a.counters.Lookup(uint32(slot), &s); err != nil {
			return nil, err
		}
		out = append(out, Entry{Slot: slot, Rule: decodeRule(r), Counters: Counters{Matched: s.Matched, Acted: s.Acted}})
	}
	return out, nil
}

// Close releases the Attachment's descriptors; the program stays attached
// as long as its pins exist.
func (a *Attachment) Close() error {
	var errs []error
	if a.link != nil {
		errs = append(errs, a.link.Close())
	}
	for _, m := range []*ebpf.Map{a.rules, a.counters} {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	return errors.Join(errs...)
}

// Detach removes the pins and closes the Attachment, which detaches the
// program.
func (a *Attachment) Detach() error {
	err := os.RemoveAll(a.Dir)
	return errors.Join(err, a.Close())
}

// Attached returns the IDs of the programs attached to device ifindex in
// direction d (in the calling thread's namespace).
func Attached(ifindex int, d Direction) ([]ebpf.ProgramID, error) {
	r, err := link.QueryPrograms(link.QueryOptions{Target: ifindex, Attach: d.attachType()})
	if err != nil {
		return nil, err
	}
	ids := make([]ebpf.ProgramID, 0, len(r.Programs))
	for _, p := range r.Programs {
		ids = append(ids, p.ID)
	}
	return ids, nil
}

// ProgramID returns the ID of the Attachment's program.
func (a *Attachment) ProgramID() (ebpf.ProgramID, error) {
	info, err := a.link.Info()
	if err != nil {
		return 0, err
	}
	return info.Program, nil
}

// MountFS mounts bpffs on FSRoot unless it is mounted there already.
func MountFS() error {
	var st unix.Statfs_t
	if err := unix.Statfs(FSRoot, &st); err == nil && st.Type == unix.BPF_FS_MAGIC {
		return nil
	}
	if err := os.MkdirAll(FSRoot, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("bpffs", FSRoot, "bpf", 0, "mode=0700"); err != nil {
		return fmt.Errorf("mounting bpffs on %s: %w", FSRoot, err)
	}
	return nil
}
