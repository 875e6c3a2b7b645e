package umad

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Where the kernel shows its RDMA devices and their umad files.
const (
	SysClassMAD = "/sys/class/infiniband_mad" // umadN/{ibdev,port}, abi_version
	SysClassIB  = "/sys/class/infiniband"     // <ca>/node_guid, <ca>/ports/<p>/...
	DevDir      = "/dev/infiniband"           // umadN, issmN
)

// Errors of finding a port.
var (
	// ErrNoUMAD: the machine has no umad class (no RDMA hardware, or the
	// ib_umad module is not loaded).
	ErrNoUMAD = errors.New("umad: " + SysClassMAD + " is absent: no RDMA device, or the ib_umad module is not loaded (modprobe ib_umad)")
	// ErrABI: the kernel speaks an older ABI than ABIVersion.
	ErrABI = errors.New("umad: unsupported ib_umad ABI")
	// ErrNoPort: no umad device for the CA and port asked for.
	ErrNoPort = errors.New("umad: no such CA port")
	// ErrSpec: a port spec that is not CA:PORT.
	ErrSpec = errors.New("umad: bad port spec")
)

// ParseSpec splits "CA:PORT" (the part of "umad:CA:PORT" after the
// scheme) into the CA name and the port number (1-254; 0 is a switch's
// management port).
func ParseSpec(s string) (ca string, port int, err error) {
	ca, p, ok := strings.Cut(s, ":")
	if !ok || ca == "" || p == "" {
		return "", 0, fmt.Errorf("%w %q: want CA:PORT, as in mlx5_0:1", ErrSpec, s)
	}
	n, err := strconv.ParseUint(p, 10, 8)
	if err != nil || n > 254 {
		return "", 0, fmt.Errorf("%w %q: port %q is not a number from 0 to 254", ErrSpec, s, p)
	}
	return ca, int(n), nil
}

// DeviceInfo is one umad device: /sys/class/infiniband_mad/umadN.
type DeviceInfo struct {
	Index int    // N
	CA    string // ibdev
	Port  int    // port
}

// Devices lists the umad devices of the machine, by index. It returns
// ErrNoUMAD when the class is absent and ErrABI when its ABI is older
// than ABIVersion.
func Devices(files Files) ([]DeviceInfo, error) {
	names, err := files.ReadDir(SysClassMAD)
	if isNotExist(err) {
		return nil, ErrNoUMAD
	}
	if err != nil {
		return nil, fmt.Errorf("umad: %w", err)
	}
	abi, err := readUint(files, path.Join(SysClassMAD, "abi_version"))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrABI, err)
	}
	if abi < ABIVersion {
		return nil, fmt.Errorf("%w: version %d, need %d", ErrABI, abi, ABIVersion)
	}
	var devs []DeviceInfo
	for _, name := range names {
		n, ok := strings.CutPrefix(name, "umad")
		idx, err := strconv.Atoi(n)
		if !ok || err != nil || idx < 0 {
			continue // abi_version, issmN, ...
		}
		dir := path.Join(SysClassMAD, name)
		ca, err := readString(files, path.Join(dir, "ibdev"))
		if err != nil {
			return nil, err
		}
		port, err := readUint(files, path.Join(dir, "port"))
		if err != nil {
			return nil, err
		}
		devs = append(devs, DeviceInfo{Index: idx, CA: ca, Port: int(port)})
	}
	sort.Slice(devs, func(i, j int) bool { return devs[i].Index < devs[j].Index })
	return devs, nil
}

// Find returns the umad device of CA ca, port port.
func Find(files Files, ca string, port int) (DeviceInfo, error) {
	devs, err := Devices(files)
	if err != nil {
		return DeviceInfo{}, err
	}
	var have []string
	for _, d := range devs {
		if d.CA == ca && d.Port == port {
			return d, nil
		}
		have = append(have, fmt.Sprintf("%s:%d", d.CA, d.Port))
	}
	return DeviceInfo{}, fmt.Errorf("%w %s:%d (have %v)", ErrNoPort, ca, port, have)
}

// UMADPath and ISSMPath are the device files of umad device i.
func UMADPath(i int) string { return fmt.Sprintf("%s/umad%d", DevDir, i) }
func ISSMPath(i int) string { return fmt.Sprintf("%s/issm%d", DevDir, i) }

// PortAttrs are what sysfs tells of a CA port.
type PortAttrs struct {
	NodeGUID uint64
	PortGUID uint64 // the interface ID of GID 0
	LID      uint16
	SMLID    uint16
	State    uint8 // 1 Down … 4 Active
}

// ReadPortAttrs reads the attributes of port port of CA ca.
func ReadPortAttrs(files Files, ca string, port int) (PortAttrs, error) {
	var a PortAttrs
	dev := path.Join(SysClassIB, ca)
	pdir := path.Join(dev, "ports", strconv.Itoa(port))
	s, err := readString(files, path.Join(dev, "node_guid"))
	if err != nil {
		return a, err
	}
	if a.NodeGUID, err = parseGUID(s); err != nil {
		return a, fmt.Errorf("umad: %s/node_guid: %w", dev, err)
	}
	if s, err = readString(files, path.Join(pdir, "gids", "0")); err != nil {
		return a, err
	}
	if a.PortGUID, err = parseGIDInterface(s); err != nil {
		return a, fmt.Errorf("umad: %s/gids/0: %w", pdir, err)
	}
	lid, err := readUint(files, path.Join(pdir, "lid"))
	if err != nil {
		return a, err
	}
	smlid, err := readUint(files, path.Join(pdir, "sm_lid"))
	if err != nil {
		return a, err
	}
	if s, err = readString(files, path.Join(pdir, "state")); err != nil {
		return a, err
	}
	// "4: ACTIVE"
	num, _, _ := strings.Cut(s, ":")
	state, err := strconv.ParseUint(strings.TrimSpace(num), 10, 8)
	if err != nil || lid > 0xffff || smlid > 0xffff {
		return a, fmt.Errorf("umad: %s: bad lid %d, sm_lid %d or state %q", pdir, lid, smlid, s)
	}
	a.LID, a.SMLID, a.State = uint16(lid), uint16(smlid), uint8(state)
	return a, nil
}

func readString(files Files, name string) (string, error) {
	b, err := files.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("umad: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// readUint reads a decimal or 0x-prefixed hexadecimal number.
func readUint(files Files, name string) (uint64, error) {
	s, err := readString(files, name)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(s, 0, 32)
	if err != nil {
		return 0, fmt.Errorf("umad: %s: %q is not a number", name, s)
	}
	return n, nil
}

// parseGUID reads "0002:c903:00a1:b2c4".
func parseGUID(s string) (uint64, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 4 {
		return 0, fmt.Errorf("GUID %q is not four groups of hex digits", s)
	}
	return parseGroups(s, parts)
}

// parseGIDInterface reads the interface ID, the last four groups, of
// "fe80:0000:0000:0000:0002:c903:00a1:b2c5".
func parseGIDInterface(s string) (uint64, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 8 {
		return 0, fmt.Errorf("GID %q is not eight groups of hex digits", s)
	}
	return parseGroups(s, parts[4:])
}

func parseGroups(s string, groups []string) (uint64, error) {
	var v uint64
	for _, g := range groups {
		if len(g) == 0 || len(g) > 4 {
			return 0, fmt.Errorf("%q: bad group %q", s, g)
		}
		n, err := strconv.ParseUint(g, 16, 16)
		if err != nil {
			return 0, fmt.Errorf("%q: bad group %q", s, g)
		}
		v = v<<16 | n
	}
	return v, nil
}
