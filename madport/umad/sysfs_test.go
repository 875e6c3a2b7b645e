package umad_test

import (
	"io/fs"
	"os"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/madport/umad"
)

func TestParseSpec(t *testing.T) {
	tests := []struct {
		in   string
		ca   string
		port int
		ok   bool
	}{
		{"mlx5_0:1", "mlx5_0", 1, true},
		{"ibp1s0:2", "ibp1s0", 2, true},
		{"sw0:0", "sw0", 0, true},
		{"mlx5_0", "", 0, false},
		{":1", "", 0, false},
		{"mlx5_0:", "", 0, false},
		{"mlx5_0:x", "", 0, false},
		{"mlx5_0:255", "", 0, false},
		{"mlx5_0:-1", "", 0, false},
	}
	for _, tt := range tests {
		ca, port, err := umad.ParseSpec(tt.in)
		if !tt.ok {
			assert.ErrorIs(t, err, umad.ErrSpec, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.ca, ca)
		assert.Equal(t, tt.port, port)
	}
}

// mapFiles is a sysfs made of a map, for the lookups alone.
type mapFiles map[string]string

func (m mapFiles) ReadFile(name string) ([]byte, error) {
	if s, ok := m[name]; ok {
		return []byte(s), nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (m mapFiles) ReadDir(name string) ([]string, error) {
	seen := map[string]bool{}
	for k := range m {
		if rest, ok := strings.CutPrefix(k, name+"/"); ok {
			first, _, _ := strings.Cut(rest, "/")
			seen[first] = true
		}
	}
	if len(seen) == 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	var names []string
	for k := range seen {
		names = append(names, k)
	}
	sort.Strings(names)
	return names, nil
}

func (m mapFiles) OpenDevice(name string, _ bool) (umad.Device, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// twoHCAs is the sysfs of a machine with a dual-port HCA and a
// single-port one, as the kernel writes it.
var twoHCAs = mapFiles{
	"/sys/class/infiniband_mad/abi_version":  "5\n",
	"/sys/class/infiniband_mad/umad0/ibdev":  "mlx5_0\n",
	"/sys/class/infiniband_mad/umad0/port":   "1\n",
	"/sys/class/infiniband_mad/umad1/ibdev":  "mlx5_0\n",
	"/sys/class/infiniband_mad/umad1/port":   "2\n",
	"/sys/class/infiniband_mad/umad10/ibdev": "mlx4_0\n",
	"/sys/class/infiniband_mad/umad10/port":  "1\n",
	"/sys/class/infiniband_mad/issm0/dev":    "231:64\n",

	"/sys/class/infiniband/mlx5_0/node_guid":      "0002:c903:00a1:b2c4\n",
	"/sys/class/infiniband/mlx5_0/ports/2/lid":    "0x1f\n",
	"/sys/class/infiniband/mlx5_0/ports/2/sm_lid": "0x1\n",
	"/sys/class/infiniband/mlx5_0/ports/2/state":  "4: ACTIVE\n",
	"/sys/class/infiniband/mlx5_0/ports/2/gids/0": "fe80:0000:0000:0000:0002:c903:00a1:b2c6\n",
}

func TestDevices(t *testing.T) {
	devs, err := umad.Devices(twoHCAs)
	require.NoError(t, err)
	assert.Equal(t, []umad.DeviceInfo{{0, "mlx5_0", 1}, {1, "mlx5_0", 2}, {10, "mlx4_0", 1}}, devs)

	d, err := umad.Find(twoHCAs, "mlx5_0", 2)
	require.NoError(t, err)
	assert.Equal(t, 1, d.Index)
	assert.Equal(t, "/dev/infiniband/umad1", umad.UMADPath(d.Index))
	assert.Equal(t, "/dev/infiniband/issm1", umad.ISSMPath(d.Index))

	_, err = umad.Find(twoHCAs, "mlx5_0", 3)
	assert.ErrorIs(t, err, umad.ErrNoPort)
	assert.ErrorContains(t, err, "have [mlx5_0:1 mlx5_0:2 mlx4_0:1]")

	a, err := umad.ReadPortAttrs(twoHCAs, "mlx5_0", 2)
	require.NoError(t, err)
	assert.Equal(t, umad.PortAttrs{NodeGUID: 0x0002c90300a1b2c4, PortGUID: 0x0002c90300a1b2c6, LID: 0x1f, SMLID: 1, State: 4}, a)
	_, err = umad.ReadPortAttrs(twoHCAs, "mlx5_0", 1)
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestNoUMAD(t *testing.T) {
	_, err := umad.Devices(mapFiles{})
	assert.ErrorIs(t, err, umad.ErrNoUMAD)
	assert.ErrorContains(t, err, "/sys/class/infiniband_mad is absent")
	_, err = umad.Open(umad.Config{CA: "mlx5_0", Port: 1, Files: mapFiles{}})
	assert.ErrorIs(t, err, umad.ErrNoUMAD)
}

func TestBadSysfs(t *testing.T) {
	with := func(k, v string) mapFiles {
		m := mapFiles{}
		for a, b := range twoHCAs {
			m[a] = b
		}
		m[k] = v
		return m
	}
	_, err := umad.Devices(with("/sys/class/infiniband_mad/abi_version", "4\n"))
	assert.ErrorIs(t, err, umad.ErrABI)
	_, err = umad.Devices(with("/sys/class/infiniband_mad/abi_version", "five\n"))
	assert.ErrorIs(t, err, umad.ErrABI)
	_, err = umad.Devices(with("/sys/class/infiniband_mad/umad0/port", "one\n"))
	assert.ErrorContains(t, err, "not a number")
	for file, bad := range map[string]string{
		"node_guid":      "0002:c903:00a1\n",
		"ports/2/gids/0": "fe80::0002:c903:00a1:b2c6\n",
		"ports/2/state":  "ACTIVE\n",
		"ports/2/lid":    "0x10000\n",
	} {
		_, err := umad.ReadPortAttrs(with("/sys/class/infiniband/mlx5_0/"+file, bad), "mlx5_0", 2)
		assert.Error(t, err, file)
	}
}

// TestOS runs the machine's Files: on a machine without RDMA devices (as
// the CI machines are) Open says so; on one with them, the umad devices
// list. The device operations go through /dev/null, which has no ioctls.
func TestOS(t *testing.T) {
	devs, err := umad.Devices(umad.OS)
	if _, statErr := os.Stat(umad.SysClassMAD); os.IsNotExist(statErr) {
		assert.ErrorIs(t, err, umad.ErrNoUMAD)
		_, err = umad.Open(umad.Config{CA: "mlx5_0", Port: 1})
		assert.ErrorIs(t, err, umad.ErrNoUMAD)
	} else {
		require.NoError(t, err)
		t.Logf("umad devices: %+v", devs)
	}

	d, err := umad.OS.OpenDevice("/dev/null", false)
	require.NoError(t, err)
	defer d.Close()
	assert.ErrorIs(t, d.Ioctl(umad.IoctlEnablePKey, nil), syscall.ENOTTY)
	assert.ErrorIs(t, d.Ioctl(umad.IoctlRegisterAgent, (&umad.RegReq{}).Encode()), syscall.ENOTTY)
	n, err := d.Write(make([]byte, umad.HeaderSize+umad.MADSize))
	require.NoError(t, err)
	assert.Equal(t, umad.HeaderSize+umad.MADSize, n)
	_, err = umad.OS.OpenDevice("/dev/infiniband/umad99", true)
	assert.ErrorIs(t, err, fs.ErrNotExist)
}
