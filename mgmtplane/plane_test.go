package mgmtplane_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/madport"
	"ibfab/madport/softumad"
	"ibfab/madport/umad"
	"ibfab/mgmtplane"
	"ibfab/simclient"
	"ibfab/sm"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// newPlane starts the plane of t under a prefix of the test's own, so
// that tests running at once do not share sockets.
func newPlane(t *testing.T, topo *topologies.Topology) *mgmtplane.Plane {
	t.Helper()
	p, err := mgmtplane.New(topo, mgmtplane.Config{Prefix: fmt.Sprintf("ibfab-test-%d-%s-", time.Now().UnixNano(), t.Name())})
	require.NoError(t, err)
	p.Start()
	t.Cleanup(func() { assert.NoError(t, p.Close()) })
	return p
}

// TestSubnetUp brings the thesis's 8-switch fabric up with the SM
// library through each of a CA's two client sides, as ibsm's sim and
// softumad ports do: the attach point (ibsim's protocol) and the umad
// endpoint (the kernel's semantics).
func TestSubnetUp(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T, n mgmtplane.Names) madport.Port
	}{
		{"attach point", func(t *testing.T, n mgmtplane.Names) madport.Port {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			p, err := simclient.Dial(ctx, simclient.Config{Name: n.Sim, IsSM: true})
			require.NoError(t, err)
			return p
		}},
		{"umad endpoint", func(t *testing.T, n mgmtplane.Names) madport.Port {
			p, err := umad.Open(umad.Config{CA: softumad.CA, Port: 1, Timeout: 200 * time.Millisecond, Files: softumad.Files(n.UMAD)})
			require.NoError(t, err)
			return p
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo := topologies.Thesis8()
			p := newPlane(t, topo)
			host := topo.Node(0).Name
			names, err := p.Open(host)
			require.NoError(t, err)
			again, err := p.Open(host)
			require.NoError(t, err)
			assert.Equal(t, names, again, "a CA opens once")
			port := tc.open(t, names)
			t.Cleanup(func() { port.Close() })
			s, err := sm.New(port, sm.Config{})
			require.NoError(t, err)
			res, err := s.Sweep(context.Background())
			require.NoError(t, err)
			require.True(t, res.SubnetUp, res.Reason)
			assert.Equal(t, 8, res.Switches)
			assert.Equal(t, 7, res.HCAs)
			// Every port the SM configured is Active in the plane's agents.
			for _, l := range topo.Links() {
				for _, end := range []topologies.PortRef{l.A, l.B} {
					st := p.Fabric().Node(end.Node).Ports.Link(uint8(end.Port)).State
					assert.Equal(t, mad.PortStateActive, st, "%s port %d", topo.Node(end.Node).Name, end.Port)
				}
			}
			assert.Equal(t, 1, p.Stats().Opened)
		})
	}
}

// TestOpenRefuses a node that is not a CA, one that does not exist, and
// any after Close.
func TestOpenRefuses(t *testing.T) {
	topo := topologies.Thesis8()
	p, err := mgmtplane.New(topo, mgmtplane.Config{Prefix: fmt.Sprintf("ibfab-test-%d-", time.Now().UnixNano())})
	require.NoError(t, err)
	p.Start()
	sw, _ := topo.Lookup("sw1")
	_, err = p.Open(topo.Node(sw).Name)
	assert.ErrorContains(t, err, "only a CA has a client side")
	_, err = p.Open("nosuch")
	assert.ErrorContains(t, err, `no node "nosuch"`)
	require.NoError(t, p.Close())
	_, err = p.Open(topo.Node(0).Name)
	assert.ErrorIs(t, err, mgmtplane.ErrClosed)
}

// TestStatusGUIDs: the plane's status gives an HCA port its port GUID and
// SMA fields, and a node its system image GUID and description, as a node
// process does; a switch's ports have no GUID. An HCA port reports its
// P_Key table, the reset table's default entry before an SM (memfabric's
// switches have no external-port tables: PartitionEnforcementCap 0).
func TestStatusGUIDs(t *testing.T) {
	topo := topologies.Thesis8()
	p := newPlane(t, topo)
	for i, st := range p.Status() {
		tn := topo.Node(i)
		assert.Equal(t, tn.Description, st.Desc, tn.Name)
		assert.Equal(t, fmt.Sprintf("%#016x", tn.SystemImageGUID), st.SysImageGUID, tn.Name)
		for _, ps := range st.Ports {
			if tn.Type == topologies.Switch {
				assert.Empty(t, ps.GUID, "%s[%d]", tn.Name, ps.Port)
				continue
			}
			assert.Equal(t, []string{"0xffff"}, ps.PKeys, "%s[%d]", tn.Name, ps.Port)
			want := tn.GUID + uint64(ps.Port)
			if g := tn.Ports[ps.Port].GUID; g != 0 {
				want = g
			}
			assert.Equal(t, fmt.Sprintf("%#016x", want), ps.GUID, "%s[%d]", tn.Name, ps.Port)
			assert.NotZero(t, ps.CapMask, "%s[%d]", tn.Name, ps.Port)
		}
	}
}
