package harness_test

// Unmodified OpenSM and infiniband-diags through ibfab's umad shim (exec
// --umad): OpenSM's SA answering whole tables (RMPP), ibping and
// ibsysstat servers getting their requests (agents by class and method),
// and a client's P_Key index choosing the P_Key on the wire.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/topologies"
	"ibfab/umadproto"
	"ibfab/wire/mad"
)

// TestShim brings up a fat tree of 30 nodes, runs OpenSM through the shim
// with a partition every port is a full member of, and checks what tools
// through the shim get.
func TestShim(t *testing.T) {
	fabrictest.UMAD2Sim(t)
	topo, err := topologies.FatTree(4, 2, 6)
	require.NoError(t, err)
	f := fabrictest.Up(t, "shim", topo, harness.UpOptions{})
	fabrictest.ShimLibrary(t)
	conf := t.TempDir() + "/partitions.conf"
	require.NoError(t, os.WriteFile(conf, []byte("Default=0x7fff, ipoib : ALL=full ;\npart1=0x0001 : ALL=full ;\n"), 0o644))
	hosts := f.Hosts()
	smNode := hosts[0]
	osm := f.StartOpenSMShim(smNode, "-P", conf)
	osm.WaitLog(t, waitLong, 0, "SUBNET UP")
	checkPorts(t, f, "Active")
	lid := map[string]uint16{}
	for _, n := range f.Status().Nodes {
		lid[n.Name] = n.Ports[0].LID
	}
	// The partition reaches the HCAs' tables (OpenSM's P_Key manager).
	fabrictest.Wait(t, waitLong, "P_Key 0x8001 in every HCA's table", func() bool {
		for _, h := range hosts[1:3] {
			var out []byte
			err := fabricnet.Do(fabricnet.Namespace(f.Name, h), func() (err error) {
				out, err = umadproto.ReadSysfs(umadproto.DefaultSocket, "infiniband/ibfab0/ports/1/pkeys/1")
				return err
			})
			if err != nil || !strings.Contains(string(out), "0x8001") {
				return false
			}
		}
		return true
	})
	client, server := hosts[len(hosts)-1], hosts[len(hosts)/2]

	t.Run("smpquery and perfquery", func(t *testing.T) {
		out := f.For(t).MustShim(client, "smpquery", "nodeinfo", strconv.Itoa(int(lid[server])))
		assert.Contains(t, out, fmt.Sprintf("%#016x", topo.Node(f.Index(server)).GUID))
		// An HCA's PMA has no port 0, perfquery's default: port 1.
		out = f.For(t).MustShim(client, "perfquery", strconv.Itoa(int(lid[server])), "1")
		assert.Contains(t, out, "PortXmitData")
	})

	t.Run("saquery NR", func(t *testing.T) {
		for _, at := range []string{client, smNode} {
			out := f.For(t).MustShim(at, "saquery", "NR")
			n := strings.Count(out, "NodeRecord dump:")
			assert.Equal(t, topo.NumNodes(), n, "saquery NR at %s: %d records\n%s", at, n, fabrictest.Tail(out, 20))
			for _, nd := range topo.Nodes() {
				assert.Contains(t, out, fmt.Sprintf("%#016x", nd.GUID), "%s missing", nd.Name)
			}
		}
		// Another table of several segments: every port's PortInfoRecord.
		out := f.For(t).MustShim(client, "saquery", "PIR")
		assert.GreaterOrEqual(t, strings.Count(out, "PortInfoRecord dump:"), len(hosts)+6, fabrictest.Tail(out, 10))
	})

	t.Run("ibping", func(t *testing.T) {
		srv := f.For(t).StartShim(server, "ibping", "-S")
		time.Sleep(300 * time.Millisecond) // the server registers its agent
		// -f (flood) sends each ping when the last is answered, not a
		// second apart.
		out := f.For(t).MustShim(client, "ibping", "-f", "-c", "10", "-L", strconv.Itoa(int(lid[server])))
		assert.Regexp(t, `10 packets transmitted, 10 received, 0% packet loss`, out)
		// A second client at once, from the SM's node.
		out = f.For(t).MustShim(smNode, "ibping", "-f", "-c", "3", "-L", strconv.Itoa(int(lid[server])))
		assert.Contains(t, out, "0% packet loss")
		if exited, err := srv.Exited(); exited {
			t.Fatalf("ibping -S exited: %v\n%s", err, srv.Output())
		}
		require.NoError(t, srv.Stop())
	})

	t.Run("ibsysstat", func(t *testing.T) {
		srv := f.For(t).StartShim(server, "ibsysstat", "-S")
		time.Sleep(300 * time.Millisecond)
		out := f.For(t).MustShim(client, "ibsysstat", strconv.Itoa(int(lid[server])))
		t.Logf("ibsysstat: %s", strings.TrimSpace(out))
		host, err := os.Hostname()
		require.NoError(t, err)
		out = f.For(t).MustShim(client, "ibsysstat", strconv.Itoa(int(lid[server])), "host")
		assert.Contains(t, out, host, "ibsysstat host")
		require.NoError(t, srv.Stop())
	})

	t.Run("pkey index", func(t *testing.T) {
		testPKeyIndex(t, f, client, server, lid[server])
	})

	t.Run("osmtest inventory", func(t *testing.T) {
		testenv.RequireProgram(t, "osmtest", "opensm")
		inv := t.TempDir() + "/inventory"
		out, errOut, err := f.Shim(client, "osmtest", "-f", "c", "-i", inv)
		require.NoError(t, err, "osmtest -f c:\n%s\n%s", fabrictest.Tail(out, 20), errOut)
		b, err := os.ReadFile(inv)
		require.NoError(t, err)
		assert.Equal(t, topo.NumNodes(), strings.Count(string(b), "DEFINE_NODE"), "nodes in the inventory")
		// The validations against it are interop's TestOsmtest's.
	})

	if !t.Failed() {
		require.NoError(t, osm.D.Stop())
	}
}

// testPKeyIndex sends vendor-class Gets from a Go client at client to one
// registered at server, with P_Key index 1 (0x8001) and 0 (0xffff): the
// server is told the index, in its own table, of the P_Key that came over
// the wire in the BTH; an index past the client's table sends the
// default partition's key.
func testPKeyIndex(t *testing.T, f *fabrictest.Fabric, client, server string, serverLID uint16) {
	dial := func(node string) *umadproto.Conn {
		var c *umadproto.Conn
		require.NoError(t, fabricnet.Do(fabricnet.Namespace(f.Name, node), func() (err error) {
			c, err = umadproto.Dial(umadproto.DefaultSocket, 1)
			return err
		}))
		t.Cleanup(func() { c.Close() })
		return c
	}
	const class, oui = 0x3e, 0x001405 // vendor range 2, no tool uses it
	srv, cl := dial(server), dial(client)
	r := umadproto.Registration{QPN: 1, MgmtClass: class, ClassVersion: 1, OUI: oui}
	r.SetMethod(uint8(mad.MethodGet))
	_, err := srv.Register(r)
	require.NoError(t, err)
	id, err := cl.Register(umadproto.Registration{QPN: 1})
	require.NoError(t, err)
	var wg sync.WaitGroup
	got := make(chan umadproto.UserMAD, 8)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			u, _, err := srv.Recv(time.Now().Add(3 * time.Second))
			if err != nil {
				close(got)
				return
			}
			got <- u
		}
	}()
	for i, c := range []struct{ send, want uint16 }{{1, 1}, {0, 0}, {1, 1}, {40, 0}} {
		idx := c.send
		m := make([]byte, mad.MADSize)
		h := mad.MAD(m)
		h.SetBaseVersion(1)
		h.SetMgmtClass(class)
		h.SetClassVersion(1)
		h.SetMethod(mad.MethodGet)
		h.SetTransactionID(uint64(100 + i))
		m[37], m[38], m[39] = 0x00, 0x14, 0x05
		require.NoError(t, cl.Send(umadproto.UserMAD{AgentID: id, LID: serverLID, QPN: 1, QKey: 0x80010000, PKeyIndex: idx}, m))
		u, ok := <-got
		require.True(t, ok, "server got nothing for P_Key index %d", idx)
		assert.Equal(t, c.want, u.PKeyIndex, "the server's P_Key index of a Get sent with index %d", idx)
	}
	wg.Wait()
}
