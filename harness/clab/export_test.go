package clab

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"ibfab/topologies"
)

const schemaFile = "clab.schema.json"

// schemas compiles containerlab's schema (testdata/README.md) and, for
// each kind of link an export writes, that link's definition in it (the
// links list accepts any of several, so a link is checked as its type).
func schemas(t *testing.T) (*jsonschema.Schema, map[string]*jsonschema.Schema) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", schemaFile))
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource(schemaFile, doc))
	whole, err := c.Compile(schemaFile)
	require.NoError(t, err)
	links := map[string]*jsonschema.Schema{}
	for typ, def := range map[string]string{"veth": "link-type-veth", "vxlan": "link-type-vxlan", "vxlan-stitch": "link-type-vxlan-stitched"} {
		links[typ], err = c.Compile(schemaFile + "#/definitions/" + def)
		require.NoError(t, err)
	}
	return whole, links
}

// asJSON decodes a YAML file into what the validator takes.
func asJSON(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	require.NoError(t, yaml.Unmarshal(data, &v))
	b, err := json.Marshal(v)
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	return doc
}

func hostList(n int, v6 bool) []Host {
	hs := make([]Host, n)
	for i := range hs {
		a := netip.AddrFrom4([4]byte{192, 0, 2, byte(10 + i)})
		if v6 {
			a = netip.MustParseAddr(fmt.Sprintf("2001:db8::%x", 10+i))
		}
		hs[i] = Host{Name: "h" + strconv.Itoa(i+1), Addr: a}
	}
	return hs
}

func options(typ LinkType) Options {
	return Options{Lab: "clabtest", Image: DefaultImage, Type: typ, VNIBase: DefaultVNIBase, DstPort: DefaultDstPort,
		UnderlayMTU: DefaultUnderlayMTU, Liveness: "1s", Keepalive: "250ms"}
}

// TestExportValidates: the default fabric on 2 hosts and the 648-host
// fat tree on 4 export to files containerlab's schema accepts, every link
// as its own type's definition too; every node is in exactly one host's
// file; a link inside a host is a veth between its two ports' ethN; a link
// between hosts appears once in each of its two hosts' files with one
// VNI, each pointing at the other's address, and no VNI serves two links.
func TestExportValidates(t *testing.T) {
	whole, linkSchemas := schemas(t)
	cases := []struct {
		name  string
		topo  *topologies.Topology
		hosts []Host
		typ   LinkType
	}{
		{"default fabric on 2", topologies.Default(), hostList(2, false), VXLANStitch},
		{"default fabric on 2, vxlan, IPv6", topologies.Default(), hostList(2, true), VXLAN},
		{"648-host fat tree on 4", fatTree(t, 36, 18, 18), hostList(4, false), VXLANStitch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			host, err := Place(c.topo, len(c.hosts), Capacity(c.topo.NumNodes(), len(c.hosts)))
			require.NoError(t, err)
			files, err := Export(c.topo, c.hosts, host, options(c.typ))
			require.NoError(t, err)
			require.Len(t, files, len(c.hosts)+1)
			require.Equal(t, TopologyFile, files[len(files)-1].Name)
			back, err := topologies.Parse(bytes.NewReader(files[len(files)-1].Data), TopologyFile)
			require.NoError(t, err)
			assert.Equal(t, c.topo.NumLinks(), back.NumLinks())

			seen := map[string]int{}   // node -> host
			vnis := map[int][]string{} // vni -> "host:node:if>remote"
			veths := 0
			for h, f := range files[:len(c.hosts)] {
				assert.Equal(t, c.hosts[h].Name+".clab.yml", f.Name)
				doc := asJSON(t, f.Data)
				require.NoError(t, whole.Validate(doc), "%s against the schema", f.Name)
				var lab clabFile
				require.NoError(t, yaml.Unmarshal(f.Data, &lab))
				assert.Equal(t, "clabtest", lab.Name)
				for name, n := range lab.Topology.Nodes {
					_, dup := seen[name]
					assert.False(t, dup, "node %s in two files", name)
					seen[name] = h
					assert.Equal(t, "linux", n.Kind)
					assert.Contains(t, n.Cmd, "--node "+name+" ")
					assert.Contains(t, n.Cmd, "--port-names eth")
				}
				for _, l := range doc.(map[string]any)["topology"].(map[string]any)["links"].([]any) {
					typ := l.(map[string]any)["type"].(string)
					require.Contains(t, linkSchemas, typ)
					require.NoError(t, linkSchemas[typ].Validate(l), "%s: link %v", f.Name, l)
				}
				for _, l := range lab.Topology.Links {
					if l.Type == "veth" {
						veths++
						continue
					}
					assert.Equal(t, c.typ.String(), l.Type)
					vnis[l.VNI] = append(vnis[l.VNI], fmt.Sprintf("%d:%s:%s>%s", h, l.Endpoint.Node, l.Endpoint.Interface, l.Remote))
				}
			}
			assert.Len(t, seen, c.topo.NumNodes())
			cut := CutLinks(c.topo, host)
			assert.Equal(t, c.topo.NumLinks()-len(cut), veths, "veth links")
			require.Len(t, vnis, len(cut), "VNIs")
			for _, l := range cut {
				vni := -1
				for i, m := range c.topo.Links() {
					if m == l {
						vni = DefaultVNIBase + i
					}
				}
				a, b := host[l.A.Node], host[l.B.Node]
				want := []string{
					fmt.Sprintf("%d:%s:eth%d>%s", a, c.topo.Node(l.A.Node).Name, l.A.Port, c.hosts[b].Addr),
					fmt.Sprintf("%d:%s:eth%d>%s", b, c.topo.Node(l.B.Node).Name, l.B.Port, c.hosts[a].Addr),
				}
				assert.ElementsMatch(t, want, vnis[vni], "VNI %d", vni)
			}
			for name, h := range seen {
				i, _ := c.topo.Lookup(name)
				assert.Equal(t, host[i], h, "node %s", name)
			}
		})
	}
}

// TestSchemaRejects: the schema check can fail: files broken in ways an
// exporter could get wrong do not validate.
func TestSchemaRejects(t *testing.T) {
	whole, _ := schemas(t)
	topo := topologies.Default()
	hosts := hostList(2, false)
	host, err := Place(topo, 2, Capacity(topo.NumNodes(), 2))
	require.NoError(t, err)
	files, err := Export(topo, hosts, host, options(VXLANStitch))
	require.NoError(t, err)
	good := string(files[0].Data)
	require.Contains(t, good, "dst-port: ")
	for name, bad := range map[string]string{
		"VNI zero":         regexpReplace(good, `vni: [0-9]+`, "vni: 0"),
		"no destination":   regexpReplace(good, `(?m)^ *dst-port: [0-9]+\n`, ""),
		"bad lab name":     strings.Replace(good, "name: clabtest", "name: -clab", 1),
		"unknown kind":     strings.Replace(good, "kind: linux", "kind: infiniband", 1),
		"remote not an IP": regexpReplace(good, `remote: [0-9.]+`, "remote: host2"),
	} {
		t.Run(name, func(t *testing.T) {
			require.NotEqual(t, good, bad)
			assert.Error(t, whole.Validate(asJSON(t, []byte(bad))))
		})
	}
}

func TestExportErrors(t *testing.T) {
	topo := topologies.Default()
	hosts := hostList(2, false)
	host, err := Place(topo, 2, Capacity(topo.NumNodes(), 2))
	require.NoError(t, err)
	cases := []struct {
		name   string
		change func(*Options)
		want   string
	}{
		{"lab name", func(o *Options) { o.Lab = "a b" }, `lab name "a b"`},
		{"link type", func(o *Options) { o.Type = 0 }, "link type"},
		{"VNI past 24 bits", func(o *Options) { o.VNIBase = 1<<24 - 3 }, "VNIs"},
		{"UDP port", func(o *Options) { o.DstPort = 70000 }, "UDP port 70000"},
		{"underlay of 1500 at MTU 4096", func(o *Options) { o.UnderlayMTU = 1500 }, "an IBA packet of MTU 4096 is a 4184-byte frame; VXLAN over an underlay of MTU 1500"},
		{"underlay of 1500 at MTU 2048", func(o *Options) { o.UnderlayMTU, o.MTU = 1500, 2048 }, "MTU 2048 is a 2136-byte frame"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := options(VXLANStitch)
			c.change(&o)
			_, err := Export(topo, hosts, host, o)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	o := options(VXLANStitch)
	o.UnderlayMTU, o.MTU = 1500, 1024
	files, err := Export(topo, hosts, host, o)
	require.NoError(t, err, "MTU 1024 fits a 1500 underlay")
	assert.Contains(t, string(files[0].Data), "--mtu 1024")
	assert.Contains(t, string(files[0].Data), "mtu: 1450")
}

func TestParseHosts(t *testing.T) {
	hs, err := ParseHosts("10.0.0.1, b=10.0.0.2,2001:db8::3")
	require.NoError(t, err)
	assert.Equal(t, []Host{{"h1", netip.MustParseAddr("10.0.0.1")}, {"b", netip.MustParseAddr("10.0.0.2")}, {"h3", netip.MustParseAddr("2001:db8::3")}}, hs)
	for in, want := range map[string]string{
		"":                      "no hosts",
		"10.0.0.1,nohost":       `"nohost" is not an IP address`,
		"a=10.0.0.1,a=10.0.0.2": "twice",
		"10.0.0.1,10.0.0.1":     "twice",
		"-x=10.0.0.1":           `name "-x"`,
	} {
		_, err := ParseHosts(in)
		if assert.Error(t, err, in) {
			assert.Contains(t, err.Error(), want, in)
		}
	}
}

// FuzzParseHosts: a list either fails or gives hosts of distinct names
// and addresses that parse back.
func FuzzParseHosts(f *testing.F) {
	f.Add("10.0.0.1,b=10.0.0.2")
	f.Add("a=::1")
	f.Fuzz(func(t *testing.T, s string) {
		hs, err := ParseHosts(s)
		if err != nil {
			return
		}
		parts := make([]string, len(hs))
		for i, h := range hs {
			parts[i] = h.Name + "=" + h.Addr.String()
		}
		back, err := ParseHosts(strings.Join(parts, ","))
		require.NoError(t, err)
		require.Equal(t, hs, back)
	})
}

func regexpReplace(s, expr, repl string) string {
	return regexp.MustCompile(expr).ReplaceAllString(s, repl)
}
