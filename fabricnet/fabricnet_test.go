package fabricnet_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"ibfab/fabricnet"
	"ibfab/internal/testsupport/testenv"
	"ibfab/topologies"
)

func TestCheckFabricName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"default", true}, {"a_1", true}, {"", false}, {"a-b", false}, {"Big", false},
		{"a b", false}, {strings.Repeat("x", 33), false}, {strings.Repeat("x", 32), true},
	}
	for _, tt := range tests {
		err := fabricnet.CheckFabricName(tt.name)
		assert.Equal(t, tt.ok, err == nil, "CheckFabricName(%q) = %v", tt.name, err)
	}
}

func TestNamespace(t *testing.T) {
	assert.Equal(t, "ibf-default-sw1", fabricnet.Namespace("default", "sw1"))
	assert.Equal(t, "ibf-x-H-0002c9_node_1", fabricnet.Namespace("x", "H-0002c9 node/1"))
}

// fabricName is unique per test process and test, and starts with "t" so
// everything it creates is named ibf-t<pid>...
func fabricName(t *testing.T, n int) string {
	return fmt.Sprintf("t%d_%d", os.Getpid(), n)
}

// create brings the plumbing of tp up and registers its removal.
func create(t *testing.T, name string, tp *topologies.Topology) *fabricnet.Fabric {
	t.Helper()
	t.Cleanup(func() {
		assert.NoError(t, fabricnet.Remove(name, nil))
		left, err := fabricnet.Namespaces(name)
		assert.NoError(t, err)
		assert.Empty(t, left, "namespaces left behind")
	})
	f, err := fabricnet.Create(name, tp, nil)
	require.NoError(t, err)
	return f
}

// checkPlumbing verifies, from inside each namespace, that every cabled
// port is an up veth named p<port> whose peer is the right port of the
// right node, at another interface index than its own.
func checkPlumbing(t *testing.T, f *fabricnet.Fabric, tp *topologies.Topology) {
	t.Helper()
	type end struct{ ifindex, peerIndex int }
	ends := map[topologies.PortRef]end{}
	for i, ns := range f.Namespaces {
		require.NoError(t, fabricnet.Do(ns, func() error {
			links, err := netlink.LinkList()
			if err != nil {
				return err
			}
			ports := 0
			for _, l := range links {
				a := l.Attrs()
				if a.Name == "lo" {
					assert.NotZero(t, a.Flags&0x1, "%s: lo is down", ns)
					continue
				}
				var port int
				if _, err := fmt.Sscanf(a.Name, "p%d", &port); err != nil {
					t.Errorf("%s: unexpected interface %s", ns, a.Name)
					continue
				}
				ports++
				assert.Equal(t, "veth", l.Type(), "%s/%s", ns, a.Name)
				assert.Equal(t, fabricnet.MTU, a.MTU, "%s/%s", ns, a.Name)
				assert.NotZero(t, a.RawFlags&0x1, "%s/%s: not up", ns, a.Name)
				peer, err := netlink.VethPeerIndex(l.(*netlink.Veth))
				if err != nil {
					return err
				}
				ends[topologies.PortRef{Node: i, Port: port}] = end{a.Index, peer}
			}
			b, err := os.ReadFile("/proc/sys/net/ipv6/conf/all/disable_ipv6")
			if err == nil {
				assert.Equal(t, "1", strings.TrimSpace(string(b)), "%s: IPv6 on", ns)
			}
			want := 0
			for p := 1; p <= tp.Node(i).NumPorts; p++ {
				if _, ok := tp.Peer(topologies.PortRef{Node: i, Port: p}); ok {
					want++
				}
			}
			assert.Equal(t, want, ports, "%s: ports", ns)
			return nil
		}))
	}
	for _, l := range tp.Links() {
		a, b := ends[l.A], ends[l.B]
		require.NotZero(t, a.ifindex, "missing end %v", l.A)
		require.NotZero(t, b.ifindex, "missing end %v", l.B)
		assert.Equal(t, b.ifindex, a.peerIndex, "link %v-%v: A's peer", l.A, l.B)
		assert.Equal(t, a.ifindex, b.peerIndex, "link %v-%v: B's peer", l.A, l.B)
		// Equal indexes would make the kernel hold carrier changes.
		assert.NotEqual(t, a.ifindex, b.ifindex, "link %v-%v: both ends at index %d", l.A, l.B, a.ifindex)
	}
}

func TestCreateRemove(t *testing.T) {
	testenv.RequireRoot(t)
	ft, err := topologies.FatTree(8, 4, 13) // 104 hosts
	require.NoError(t, err)
	tests := []struct {
		name string
		tp   *topologies.Topology
	}{
		{"thesis8", topologies.Thesis8()},
		{"fat tree 104 hosts", ft},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fabricName(t, i)
			f := create(t, name, tt.tp)
			require.Len(t, f.Namespaces, tt.tp.NumNodes())
			got, err := fabricnet.Namespaces(name)
			require.NoError(t, err)
			assert.Len(t, got, tt.tp.NumNodes())
			checkPlumbing(t, f, tt.tp)
		})
	}
}

// TestRemoveWithoutState removes a fabric knowing only its name, as ibfab
// down does after the harness crashed before writing its state.
func TestRemoveWithoutState(t *testing.T) {
	testenv.RequireRoot(t)
	name := fabricName(t, 10)
	_ = create(t, name, topologies.Thesis8())
	require.NoError(t, fabricnet.Remove(name, nil))
	left, err := fabricnet.Namespaces(name)
	require.NoError(t, err)
	assert.Empty(t, left)
}

// TestCreateRefusesExisting: a namespace of the fabric already exists (the
// fabric is up, or was not taken down); Create must fail before touching
// anything and name the way out.
func TestCreateRefusesExisting(t *testing.T) {
	testenv.RequireRoot(t)
	name := fabricName(t, 20)
	tp := topologies.Thesis8()
	other := topologies.New()
	_, err := other.AddNode(*tp.Node(tp.NumNodes() - 1))
	require.NoError(t, err)
	_ = create(t, name, other) // the last node's namespace now exists

	_, err = fabricnet.Create(name, tp, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exists")
	assert.Contains(t, err.Error(), "ibfab down --name "+name)
	left, err := fabricnet.Namespaces(name)
	require.NoError(t, err)
	assert.Len(t, left, 1, "only the pre-existing namespace may remain")
}

func TestRemoveRefusesForeignNamespace(t *testing.T) {
	testenv.RequireRoot(t)
	err := fabricnet.Remove("tx", []string{"ibf-other-sw1"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refusing")
}

// TestRemoveAfterIPNetns: `ip netns add` after our namespaces exist must
// not hide them (iproute2 bind-mounts /run/netns over itself when it is no
// mount point yet, and the namespaces under it then cannot be removed), so
// the fabric still comes down whole.
func TestRemoveAfterIPNetns(t *testing.T) {
	testenv.RequireRoot(t)
	name := fabricName(t, 11)
	_ = create(t, name, topologies.Thesis8())
	mi, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	shared := false
	for _, line := range strings.Split(string(mi), "\n") {
		f := strings.Fields(line)
		if len(f) > 6 && f[4] == "/run/netns" && strings.Contains(line, " shared:") {
			shared = true
		}
	}
	assert.True(t, shared, "/run/netns is no shared mount point")

	probe := fabricnet.Namespace(name, "probe")
	out, err := exec.Command("ip", "netns", "add", probe).CombinedOutput()
	require.NoError(t, err, "ip netns add: %s", out)
	out, err = exec.Command("ip", "netns", "del", probe).CombinedOutput()
	require.NoError(t, err, "ip netns del: %s", out)
	require.NoError(t, fabricnet.Remove(name, nil))
	left, err := fabricnet.Namespaces(name)
	require.NoError(t, err)
	assert.Empty(t, left)
}

func TestHostNames(t *testing.T) {
	assert.Equal(t, "ibf-x--host1", fabricnet.HostNamespace("x", 0))
	assert.Equal(t, "u3", fabricnet.UnderlayIface(2))
	// Every pair of 6 hosts gets a subnet of its own, each end an address.
	const hosts = 6
	seen := map[string]bool{}
	for a := range hosts {
		for b := a + 1; b < hosts; b++ {
			ia, ib := fabricnet.UnderlayAddr(a, b, hosts), fabricnet.UnderlayAddr(b, a, hosts)
			assert.Equal(t, ia[:3], ib[:3], "hosts %d, %d on one subnet", a, b)
			assert.Equal(t, []byte{1, 2}, []byte{ia[3], ib[3]})
			assert.False(t, seen[ia.String()], "%v twice", ia)
			seen[ia.String()] = true
		}
	}
	assert.Len(t, seen, hosts*(hosts-1)/2)
}

// TestCreateOnHosts: the default fabric on 2 hosts, the nodes alternating
// (so that links to CAs cross too): every link inside a host is a veth
// pair as Create makes, every link between hosts a VXLAN device p<port>
// at each end (the link's VNI, the underlay's MTU less 50, up) over the
// hosts' underlay veth; Remove leaves nothing, host namespaces included.
func TestCreateOnHosts(t *testing.T) {
	testenv.RequireRoot(t)
	name := fabricName(t, 30)
	tp := topologies.Thesis8()
	host := make([]int, tp.NumNodes())
	for i := range host {
		host[i] = i % 2
	}
	t.Cleanup(func() {
		assert.NoError(t, fabricnet.Remove(name, nil))
		left, err := fabricnet.Namespaces(name)
		assert.NoError(t, err)
		assert.Empty(t, left, "namespaces left behind")
	})
	f, err := fabricnet.CreateOnHosts(name, tp, host, 2, nil)
	require.NoError(t, err)
	require.Equal(t, []string{fabricnet.HostNamespace(name, 0), fabricnet.HostNamespace(name, 1)}, f.Hosts)
	got, err := fabricnet.Namespaces(name)
	require.NoError(t, err)
	assert.Len(t, got, tp.NumNodes()+2)
	cut := map[int]bool{}
	for _, k := range f.Cut {
		cut[k] = true
	}
	for k, l := range tp.Links() {
		assert.Equal(t, host[l.A.Node] != host[l.B.Node], cut[k], "link %d cut", k)
		for _, p := range []topologies.PortRef{l.A, l.B} {
			require.NoError(t, fabricnet.Do(f.Namespaces[p.Node], func() error {
				dev, err := netlink.LinkByName(fabricnet.PortIface(p.Port))
				if err != nil {
					return err
				}
				assert.NotZero(t, dev.Attrs().RawFlags&0x1, "%v: not up", p)
				if !cut[k] {
					assert.Equal(t, "veth", dev.Type(), "%v", p)
					return nil
				}
				vx, ok := dev.(*netlink.Vxlan)
				require.True(t, ok, "%v is a %s", p, dev.Type())
				assert.Equal(t, fabricnet.VNIBase+k, vx.VxlanId, "%v", p)
				assert.Equal(t, fabricnet.VXLANPort, vx.Port, "%v", p)
				assert.Equal(t, fabricnet.UnderlayMTU-50, vx.MTU, "%v", p)
				return nil
			}))
		}
	}
	for h, ns := range f.Hosts {
		require.NoError(t, fabricnet.Do(ns, func() error {
			u, err := netlink.LinkByName(fabricnet.UnderlayIface(1 - h))
			if err != nil {
				return err
			}
			addrs, err := netlink.AddrList(u, netlink.FAMILY_V4)
			if err != nil {
				return err
			}
			require.Len(t, addrs, 1)
			assert.True(t, addrs[0].IP.Equal(fabricnet.UnderlayAddr(h, 1-h, 2)), "host %d: %v", h+1, addrs[0].IP)
			return nil
		}))
	}
}

// TestCreateOnHostsRefuses: bad placements fail before anything is made.
func TestCreateOnHostsRefuses(t *testing.T) {
	tp := topologies.Thesis8()
	all := func(h int) []int {
		p := make([]int, tp.NumNodes())
		for i := range p {
			p[i] = h
		}
		return p
	}
	for _, c := range []struct {
		name  string
		host  []int
		hosts int
		want  string
	}{
		{"one host", all(0), 1, "2 or more"},
		{"short", []int{0, 1}, 2, "a placement of 2 nodes"},
		{"out of range", all(2), 2, "placed on host 3 of 2"},
		{"host unused", all(0), 2, "host 2 gets no node"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := fabricnet.CreateOnHosts("xnever", tp, c.host, c.hosts, nil)
			require.ErrorContains(t, err, c.want)
		})
	}
}
