package cache

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"ibfab/sm/txn"
	"ibfab/wire/mad"
)

// ErrMKeyFile wraps the errors of reading an M_Key cache file.
var ErrMKeyFile = errors.New("sm: bad M_Key file")

// MKeyFile is the M_Key cache kept beside the LID file lidFile.
func MKeyFile(lidFile string) string { return lidFile + ".mkey" }

// MKeyCache is what the M_Key cache file holds: the key each port holds,
// by port GUID, and the directed route the SM at port SMPort reached it
// by (an SMP to a port not met yet since a restart carries its key).
//
// The file has a line "smport" and the SM's port GUID, then one line per
// port: its GUID, its M_Key, both in hex as OpenSM's guid2mkey file, and
// the route, as ibnetdiscover spells it, when known:
//
//	smport 0x0002fab000000400
//	0x0002fab000000401 0x00000000000c0ffe 0,1,3
//
// Blank lines and lines starting with '#' are ignored. Errors name the
// line.
type MKeyCache struct {
	SMPort uint64
	Keys   map[uint64]uint64
	Paths  map[uint64]string
}

// ReadMKeyCache parses an M_Key cache file.
func ReadMKeyCache(r io.Reader) (*MKeyCache, error) {
	c := &MKeyCache{Keys: map[uint64]uint64{}, Paths: map[uint64]string{}}
	if err := readLines(r, ErrMKeyFile, c.readLine); err != nil {
		return nil, err
	}
	return c, nil
}

// readLine takes in a line of an M_Key cache file, s split into fields:
// the SM's port, or a port GUID not listed before, its key and maybe its
// route.
func (c *MKeyCache) readLine(s string, fields []string) error {
	if fields[0] == "smport" {
		g, err := strconv.ParseUint(fields[len(fields)-1], 0, 64)
		if len(fields) != 2 || err != nil || g == 0 {
			return fmt.Errorf("want smport and the SM's port GUID, got %q", s)
		}
		c.SMPort = g
		return nil
	}
	if len(fields) != 2 && len(fields) != 3 {
		return fmt.Errorf("want port GUID, M_Key and maybe a route, got %q", s)
	}
	guid, err := strconv.ParseUint(fields[0], 0, 64)
	if err != nil || guid == 0 {
		return fmt.Errorf("bad GUID %q", fields[0])
	}
	key, err := strconv.ParseUint(fields[1], 0, 64)
	if err != nil {
		return fmt.Errorf("bad M_Key %q", fields[1])
	}
	if _, dup := c.Keys[guid]; dup {
		return fmt.Errorf("GUID %#x listed twice", guid)
	}
	c.Keys[guid] = key
	if len(fields) == 3 {
		path, err := parsePath(fields[2])
		if err != nil {
			return fmt.Errorf("route %q: %v", fields[2], err)
		}
		c.Paths[guid] = txn.PathString(path)
	}
	return nil
}

// parsePath reads a directed route as pathString spells it: "0", then
// the ports out of which it leaves each switch.
func parsePath(s string) ([]uint8, error) {
	parts := strings.Split(s, ",")
	if parts[0] != "0" {
		return nil, errors.New("a route starts at 0")
	}
	if len(parts)-1 > mad.MaxHopCount {
		return nil, fmt.Errorf("%d hops, at most %d", len(parts)-1, mad.MaxHopCount)
	}
	path := []uint8{0}
	for _, p := range parts[1:] {
		n, err := strconv.ParseUint(p, 10, 8)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("bad port %q", p)
		}
		path = append(path, uint8(n))
	}
	return path, nil
}

// WriteTo writes c in the file format, sorted by GUID.
func (c *MKeyCache) WriteTo(w io.Writer) (int64, error) {
	guids := slices.Sorted(maps.Keys(c.Keys))
	var b bytes.Buffer
	b.WriteString("# ibsm M_Key cache: port GUID, the M_Key the port holds, the route to it from smport\n")
	if c.SMPort != 0 {
		fmt.Fprintf(&b, "smport 0x%016x\n", c.SMPort)
	}
	for _, g := range guids {
		fmt.Fprintf(&b, "0x%016x 0x%016x", g, c.Keys[g])
		if p, ok := c.Paths[g]; ok {
			b.WriteString(" " + p)
		}
		b.WriteString("\n")
	}
	n, err := w.Write(b.Bytes())
	return int64(n), err
}

// LoadMKeyCache reads the M_Key file at path; a missing file holds no
// keys.
func LoadMKeyCache(path string) (*MKeyCache, error) {
	return load(path, func() *MKeyCache {
		return &MKeyCache{Keys: map[uint64]uint64{}, Paths: map[uint64]string{}}
	}, ReadMKeyCache)
}

// Save writes c to path atomically, readable by its owner only (a
// temporary file's mode): the keys are secrets.
func (c *MKeyCache) Save(path string) error { return saveAtomic(path, c) }
