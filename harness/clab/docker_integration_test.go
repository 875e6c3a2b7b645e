package clab_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/harness/clab"
	"ibfab/internal/ctl"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

// dockerd is a Docker daemon of the test's own: its socket, state and
// containerd under a temporary directory, no bridge, no iptables rules,
// vfs storage (no overlay on whatever the directory is on), so that it
// touches nothing of the machine's and goes with the test.
type dockerd struct {
	t    *testing.T
	host string // DOCKER_HOST
	cmd  *exec.Cmd
}

func startDockerd(t *testing.T) *dockerd {
	t.Helper()
	testenv.RequireProgram(t, "dockerd", "docker.io")
	testenv.RequireProgram(t, "docker", "docker.io")
	dir, err := os.MkdirTemp("", "clabdk")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := &dockerd{t: t, host: "unix://" + filepath.Join(dir, "d.sock")}
	logf, err := os.Create(filepath.Join(dir, "dockerd.log"))
	require.NoError(t, err)
	defer logf.Close()
	d.cmd = exec.Command("dockerd", "--host", d.host, "--data-root", filepath.Join(dir, "data"),
		"--exec-root", filepath.Join(dir, "exec"), "--pidfile", filepath.Join(dir, "d.pid"),
		"--iptables=false", "--ip6tables=false", "--ip-forward=false", "--ip-masq=false", "--bridge=none",
		"--storage-driver", "vfs")
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	require.NoError(t, d.cmd.Start())
	exited := make(chan struct{})
	go func() { d.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = d.cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "dockerd.log"))
			t.Logf("dockerd's log:\n%s", fabrictest.Tail(string(b), 30))
		}
	})
	fabrictest.Wait(t, 30*time.Second, "dockerd answering", func() bool {
		_, err := d.docker("info")
		return err == nil
	})
	return d
}

// docker runs the docker client against the test's daemon.
func (d *dockerd) docker(args ...string) (string, error) {
	c := exec.Command("docker", args...)
	c.Env = append(os.Environ(), "DOCKER_HOST="+d.host, "DOCKER_BUILDKIT=0")
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	return strings.TrimSpace(out.String()), err
}

func (d *dockerd) must(args ...string) string {
	d.t.Helper()
	out, err := d.docker(args...)
	require.NoError(d.t, err, "docker %s:\n%s", strings.Join(args, " "), out)
	return out
}

// TestNodeInDocker: make image builds the node image with no network (FROM
// scratch), and a node of the default fabric runs from it in a container
// wired by veth as containerlab wires a kind linux node (the veth end moved
// into the container's namespace as eth1), the rest of the fabric as
// ibfab up runs it: ibsm brings the mixed fabric to Active, the
// container's HCA included, and traffic reaches it.
func TestNodeInDocker(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDockerd(t)
	image := fmt.Sprintf("clab-ibfab-node:%d", os.Getpid())
	mk := exec.Command("make", "-s", "-C", filepath.Join("..", ".."), "image", "IMAGE="+image, "IMAGE_DIR="+t.TempDir())
	mk.Env = append(os.Environ(), "DOCKER_HOST="+d.host)
	out, err := mk.CombinedOutput()
	require.NoError(t, err, "make image:\n%s", out)
	size := d.must("image", "inspect", "-f", "{{.Size}}", image)
	t.Logf("make image: %s, %s bytes", image, size)

	fabrictest.BuildBinaries(t)
	topo := topologies.Default()
	const node, fabric = "ca7", "clabdk"
	o := harness.UpOptions{TimeScale: 1}
	t.Cleanup(func() {
		if err := harness.Down(fabric); err != nil {
			t.Errorf("down: %v", err)
		}
	})
	_, err = harness.Up(fabric, topo, o)
	require.NoError(t, err)
	// ca7 leaves the namespace ibfab up made for it for a container.
	require.NoError(t, harness.Kill(fabric, node))
	dir := t.TempDir()
	require.NoError(t, topologies.WriteFile(filepath.Join(dir, clab.TopologyFile), topo))
	name := fmt.Sprintf("clab%d-%s", os.Getpid(), node)
	d.must("run", "-d", "--name", name, "--network", "none", "--cap-add", "NET_ADMIN", "--cap-add", "NET_RAW",
		"-v", filepath.Join(dir, clab.TopologyFile)+":"+clab.TopologyInNode+":ro", image,
		"/bin/ibhca", "--fabric", fabric, "--node", node, "--topology", clab.TopologyInNode,
		"--port-names", clab.PortPrefix, "--port-wait", "60s")
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := d.docker("logs", name)
			t.Logf("container %s's log:\n%s", name, logs)
		}
		d.docker("rm", "-f", name)
	})
	pid, err := strconv.Atoi(d.must("inspect", "-f", "{{.State.Pid}}", name))
	require.NoError(t, err)

	// Wire it: the veth end p1 of ca7's namespace into the container's as eth1.
	cns, err := netns.GetFromPid(pid)
	require.NoError(t, err)
	defer cns.Close()
	old, err := netns.GetFromName(fabricnet.Namespace(fabric, node))
	require.NoError(t, err)
	defer old.Close()
	ho, err := netlink.NewHandleAt(old)
	require.NoError(t, err)
	defer ho.Close()
	p1, err := ho.LinkByName("p1")
	require.NoError(t, err)
	require.NoError(t, ho.LinkSetNsFd(p1, int(cns)))
	hc, err := netlink.NewHandleAt(cns)
	require.NoError(t, err)
	defer hc.Close()
	p1, err = hc.LinkByName("p1")
	require.NoError(t, err)
	require.NoError(t, hc.LinkSetName(p1, "eth1"))
	require.NoError(t, hc.LinkSetUp(p1))
	// The switch at the other end watches its new peer (what ibfab restart
	// tells a neighbour).
	peer, ok := topo.Peer(topologies.PortRef{Node: mustLookup(t, topo, node), Port: 1})
	require.True(t, ok)
	swName := topo.Node(peer.Node).Name
	require.NoError(t, callNode(nodeproc.SocketPath(fabric, swName), "peers", nodeproc.PeersArgs{PIDs: map[int]int{peer.Port: pid}}, nil))

	// The container's control socket, seen from here through its root.
	sock := filepath.Join("/proc", strconv.Itoa(pid), "root", strings.TrimPrefix(nodeproc.SocketPath(fabric, node), "/"))
	state := func() string {
		var st nodeproc.Status
		if callNode(sock, "status", nil, &st) != nil || len(st.Ports) == 0 {
			return ""
		}
		return st.Ports[0].State
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		var st nodeproc.Status
		err := callNode(sock, "status", nil, &st)
		t.Logf("the container's node: %v %+v", err, st.Ports)
		ps, _ := d.docker("ps", "-a")
		links, _ := exec.Command("nsenter", "-t", strconv.Itoa(pid), "-n", "ip", "link").CombinedOutput()
		t.Logf("docker ps -a:\n%s\nthe container's interfaces:\n%s", ps, links)
		var sw nodeproc.Status
		err = callNode(nodeproc.SocketPath(fabric, swName), "status", nil, &sw)
		t.Logf("%s: %v %+v", swName, err, sw.Ports)
	})
	fabrictest.Wait(t, 20*time.Second, "the container's port trained", func() bool { return state() == "Init" })

	var buf bytes.Buffer
	sm := exec.Command(fabrictest.Bin(t, "ibsm"), "--port", "sim", "--once")
	sm.Stdout, sm.Stderr = &buf, &buf
	require.NoError(t, harness.Exec(fabric, "ca4", sm, harness.ExecOptions{}), "ibsm:\n%s", buf.String())
	fabrictest.Wait(t, 10*time.Second, "the container's port Active", func() bool { return state() == "Active" })
	for _, n := range topo.Nodes() {
		if n.Name == node {
			continue
		}
		var st nodeproc.Status
		require.NoError(t, callNode(nodeproc.SocketPath(fabric, n.Name), "status", nil, &st))
		for _, p := range st.Ports {
			if p.Peer != "" || n.Type == topologies.CA {
				require.Equal(t, "Active", p.State, "%s port %d", n.Name, p.Port)
			}
		}
	}
	// Traffic from ca4 to the container's HCA arrives.
	var ct nodeproc.Status
	require.NoError(t, callNode(sock, "status", nil, &ct))
	lid := ct.Ports[0].LID
	require.NoError(t, callNode(nodeproc.SocketPath(fabric, "ca4"), "traffic-start", nodeproc.TrafficArgs{Port: 1, Load: 0.1, Payload: 256, Dests: []uint16{lid}, Seed: 1}, nil))
	fabrictest.Wait(t, 10*time.Second, "the container's HCA receiving", func() bool {
		var st nodeproc.Status
		return callNode(sock, "status", nil, &st) == nil && st.Ports[0].Traffic != nil && st.Ports[0].Traffic.RxStamped >= 100
	})
	require.NoError(t, callNode(nodeproc.SocketPath(fabric, "ca4"), "traffic-stop", map[string]any{"port": 1}, nil))
	t.Logf("%s in container %s (pid %d) LID %d, Active beside %d node processes; ibsm: %s", node, name, pid, lid, topo.NumNodes()-1, fabrictest.Tail(strings.TrimSpace(buf.String()), 1))
}

func mustLookup(t *testing.T, topo *topologies.Topology, name string) int {
	t.Helper()
	i, ok := topo.Lookup(name)
	require.True(t, ok, name)
	return i
}

func callNode(sock, op string, args, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return ctl.Call(ctx, sock, op, args, result)
}
