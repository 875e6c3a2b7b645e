package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"ibfab/internal/fabricnet"
	"ibfab/topologies"
)

// RunDir holds one directory per running fabric: its state, its topology
// and (with the node processes) their control sockets.
const RunDir = "/run/ibfab"

const (
	stateFile    = "state.json"
	topologyFile = "topology.net"
	defaultName  = "default"
)

// fabricState is what `ibfab up` records so that `down` and `status` work
// from any shell, also after the harness that brought the fabric up died.
type fabricState struct {
	Fabric     string      `json:"fabric"`
	Created    time.Time   `json:"created"`
	Namespaces []string    `json:"namespaces"`
	Nodes      []nodeState `json:"nodes"`
}

type nodeState struct {
	Name      string `json:"name"`
	Type      string `json:"type"` // "switch", "hca" or "router"
	GUID      string `json:"guid"`
	Namespace string `json:"namespace"`
}

func fabricDir(name string) string { return filepath.Join(RunDir, name) }

// Up creates the fabric's namespaces and veth pairs from t and records its
// state under RunDir. progress, when not nil, sees each step.
func Up(name string, t *topologies.Topology, progress func(done, total int)) (*fabricState, error) {
	if err := fabricnet.CheckFabricName(name); err != nil {
		return nil, err
	}
	dir := fabricDir(name)
	if _, err := os.Stat(filepath.Join(dir, stateFile)); err == nil {
		return nil, fmt.Errorf("fabric %q is up (state in %s); take it down first with ibfab down --name %s", name, dir, name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := fabricnet.Create(name, t, progress)
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	st := &fabricState{Fabric: name, Created: time.Now().UTC(), Namespaces: f.Namespaces}
	for i, n := range t.Nodes() {
		st.Nodes = append(st.Nodes, nodeState{Name: n.Name, Type: nodeTypeName(n.Type),
			GUID: fmt.Sprintf("%#016x", n.GUID), Namespace: f.Namespaces[i]})
	}
	if err := topologies.WriteFile(filepath.Join(dir, topologyFile), t); err != nil {
		return nil, errors.Join(err, Down(name))
	}
	if err := writeState(dir, st); err != nil {
		return nil, errors.Join(err, Down(name))
	}
	return st, nil
}

// Down removes everything Up created for the fabric: with its state when
// there is one, by the namespace prefix when there is not. A fabric that is
// not up is not an error.
func Down(name string) error {
	if err := fabricnet.CheckFabricName(name); err != nil {
		return err
	}
	dir := fabricDir(name)
	var namespaces []string
	st, err := readState(dir)
	switch {
	case err == nil:
		namespaces = st.Namespaces
	case errors.Is(err, os.ErrNotExist):
	default:
		return err
	}
	if err := fabricnet.Remove(name, namespaces); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

func writeState(dir string, st *fabricState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, stateFile))
}

func readState(dir string) (*fabricState, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, err
	}
	var st fabricState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, stateFile), err)
	}
	return &st, nil
}

func nodeTypeName(t topologies.NodeType) string {
	switch t {
	case topologies.Switch:
		return "switch"
	case topologies.CA:
		return "hca"
	}
	return "router"
}
