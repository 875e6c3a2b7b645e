package sysfstree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"ibfab/harness"
	"ibfab/ibsysfs"
	"ibfab/nodeproc"
	"ibfab/wire/mad"
)

// defaultGIDPrefix is the subnet prefix of a port's GID 0: the link-local
// prefix an SM keeps unless configured otherwise (ibsm keeps it).
const defaultGIDPrefix = 0xfe80000000000000

// Dir is where DIR/class/infiniband is, for DIR.
func Dir(root string) string { return filepath.Join(root, "class", "infiniband") }

// Device is one HCA's device directory: its name and files, paths
// relative to the device directory.
type Device struct {
	Name  string
	Files []ibsysfs.File
}

// Devices renders every HCA of s that answered its status query. It
// fails on two nodes with one device name, and on a status it cannot
// read (a GUID not in hex).
func Devices(s *harness.FabricStatus) ([]Device, error) {
	var out []Device
	byDev := map[string]string{}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if n.Type != nodeproc.KindHCA.String() || n.Error != "" {
			continue
		}
		dev := ibsysfs.DeviceName(n.Name)
		if other, dup := byDev[dev]; dup {
			return nil, fmt.Errorf("nodes %q and %q would both be device %s", other, n.Name, dev)
		}
		byDev[dev] = n.Name
		d, err := device(dev, &n.Status)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
		out = append(out, d)
	}
	return out, nil
}

func parseGUID(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	g, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		return 0, fmt.Errorf("GUID %q: %w", s, err)
	}
	return g, nil
}

func device(name string, n *nodeproc.Status) (Device, error) {
	guid, err := parseGUID(n.GUID)
	if err != nil {
		return Device{}, err
	}
	sys, err := parseGUID(n.SysImageGUID)
	if err != nil {
		return Device{}, err
	}
	if sys == 0 {
		sys = guid
	}
	d := Device{Name: name, Files: ibsysfs.NodeFiles(ibsysfs.Node{GUID: guid, SysImageGUID: sys, Desc: n.Desc})}
	add := func(dir string, fs []ibsysfs.File) {
		for _, f := range fs {
			d.Files = append(d.Files, ibsysfs.File{Name: dir + "/" + f.Name, Content: f.Content})
		}
	}
	for i := range n.Ports {
		p := &n.Ports[i]
		pg, err := parseGUID(p.GUID)
		if err != nil {
			return Device{}, err
		}
		dir := fmt.Sprintf("ports/%d", p.Port)
		add(dir, ibsysfs.PortFiles(sysfsPort(p, pg)))
		add(dir, pkeyFiles(p.PKeys))
		c := sysfsCounters(p.Counters)
		add(dir+"/counters", ibsysfs.CounterFiles(c))
		add(dir+"/counters_ext", ibsysfs.CounterExtFiles(c))
	}
	return d, nil
}

// pkeyFiles are the port's pkeys/N files: its P_Key table's non-zero
// entries as status lists them, in order (an SM fills the table from
// index 0), or the default P_Key alone for a port that reports none.
func pkeyFiles(pkeys []string) []ibsysfs.File {
	if len(pkeys) == 0 {
		pkeys = []string{fmt.Sprintf("0x%04x", uint16(mad.DefaultPKey))}
	}
	fs := make([]ibsysfs.File, len(pkeys))
	for i, k := range pkeys {
		fs[i] = ibsysfs.File{Name: fmt.Sprintf("pkeys/%d", i), Content: k + "\n"}
	}
	return fs
}

// sysfsPort is the port's attributes from its status; a state the status
// names as no code ("Unknown") shows as 0.
func sysfsPort(p *nodeproc.PortStatus, guid uint64) ibsysfs.Port {
	st, _ := ibsysfs.ParsePortState(p.State)
	ph, _ := ibsysfs.ParsePhysState(p.Phys)
	w, _ := ibsysfs.ParseWidth(p.Width)
	sp, _ := ibsysfs.ParseSpeed(p.Speed)
	return ibsysfs.Port{State: st, Phys: ph, Width: w, Speed: sp, LID: p.LID, LMC: p.LMC, SMLID: p.SMLID,
		SMSL: p.SMSL, CapMask: p.CapMask, GIDPrefix: defaultGIDPrefix, GUID: guid}
}

func sysfsCounters(c nodeproc.Counters) ibsysfs.Counters {
	return ibsysfs.Counters{
		SymbolErrors: uint64(c.SymbolErrorCounter), LinkErrorRecovery: uint64(c.LinkErrorRecoveryCounter),
		LinkDowned: uint64(c.LinkDownedCounter), RcvErrors: uint64(c.PortRcvErrors),
		RcvRemotePhysicalErrors: uint64(c.PortRcvRemotePhysicalErrors), RcvSwitchRelayErrors: uint64(c.PortRcvSwitchRelayErrors),
		XmitDiscards: uint64(c.PortXmitDiscards), XmitConstraintErrors: uint64(c.PortXmitConstraintErrors),
		RcvConstraintErrors: uint64(c.PortRcvConstraintErrors), LocalLinkIntegrityErrs: uint64(c.LocalLinkIntegrityErrors),
		ExcessiveBufferOverruns: uint64(c.ExcessiveBufferOverrunErrors), VL15Dropped: uint64(c.VL15Dropped),
		XmitWait: uint64(c.PortXmitWait), XmitData: c.PortXmitData, RcvData: c.PortRcvData,
		XmitPkts: c.PortXmitPkts, RcvPkts: c.PortRcvPkts,
	}
}

// WriteDevices writes devs under Dir(root), each file whole through a
// temporary file and a rename, a file whose content is already what it
// would be left alone.
func WriteDevices(root string, devs []Device) error {
	base := Dir(root)
	fail := func(err error) error { return fmt.Errorf("cannot write the tree under %s: %w", root, err) }
	if err := os.MkdirAll(base, 0o755); err != nil {
		return fail(err)
	}
	for _, d := range devs {
		for _, f := range d.Files {
			if err := writeFile(filepath.Join(base, d.Name, filepath.FromSlash(f.Name)), []byte(f.Content)); err != nil {
				return fail(err)
			}
		}
	}
	return nil
}

func writeFile(path string, content []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, content) {
		return nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// A dot name: tools that list a directory (ibstatus's *) skip it.
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(content)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), 0o444) // sysfs attributes read as r--r--r--
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
	}
	return werr
}

// Write takes one status snapshot of fabric name and writes its HCAs
// under Dir(root), returning the snapshot.
func Write(ctx context.Context, name, root string) (*harness.FabricStatus, error) {
	s, err := harness.Status(ctx, name)
	if err != nil {
		return nil, err
	}
	devs, err := Devices(s)
	if err != nil {
		return nil, err
	}
	if len(devs) == 0 {
		return nil, fmt.Errorf("fabric %s has no HCA that answered", name)
	}
	return s, WriteDevices(root, devs)
}

// Run writes the tree every interval until ctx ends, which is no error.
// The first write's error is returned at once (no such fabric, an
// unwritable directory); a later one is passed to report and the next
// refresh tried, as a node restarting must not stop the tree.
func Run(ctx context.Context, name, root string, interval time.Duration, report func(error)) error {
	if _, err := Write(ctx, name, root); err != nil {
		return err
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if _, err := Write(ctx, name, root); err != nil && !errors.Is(ctx.Err(), context.Canceled) && report != nil {
				report(err)
			}
		}
	}
}
