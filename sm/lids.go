package sm

import (
	"io"

	"ibfab/sm/cache"
	"ibfab/sm/routing"
)

// The LID cache lives in package sm/cache; these are its names as sm's
// callers (cmd/ibsm, the harness, the tests) know them.

// LIDMap keeps the LIDs the SM gave each port GUID, across sweeps and,
// through Config.LIDFile (OpenSM's guid2lid format), across restarts
// (cache.LIDMap).
type LIDMap = cache.LIDMap

var (
	// ErrLIDFile wraps the errors of reading a GUID→LID file.
	ErrLIDFile = cache.ErrLIDFile
	// ErrNoLIDs is returned when the unicast LID range is used up.
	ErrNoLIDs = cache.ErrNoLIDs
)

// NewLIDMap returns an empty map.
func NewLIDMap() *LIDMap { return cache.NewLIDMap() }

// ReadLIDMap parses a GUID→LID file. Errors name the line.
func ReadLIDMap(r io.Reader) (*LIDMap, error) { return cache.ReadLIDMap(r) }

// LoadLIDMap reads the file at path; a missing file is an empty map.
func LoadLIDMap(path string) (*LIDMap, error) { return cache.LoadLIDMap(path) }

// beginPartial starts a partial discovery: the LIDs the end ports of f
// have stay theirs, and new ports get LIDs around them.
func (s *SM) beginPartial(f *routing.Fabric) {
	s.lids.BeginSweep()
	for _, e := range f.Ends() {
		s.lids.Use(e.LID, e.NumLIDs())
	}
}
