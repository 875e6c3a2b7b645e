package routing_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ibfab/sm/routing"
	_ "ibfab/sm/routing/ftree"
	_ "ibfab/sm/routing/minhop"
	"ibfab/sm/routing/multipath"
	_ "ibfab/sm/routing/updn"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// The golden route regression test (issue 31: routes and every existing
// test unchanged). TestGoldenRoutes routes a fixed set of generated
// fabrics with every registered engine under the options it honours, at
// LMC 0, 1 and 2, with and without the multipath aliases in 1, 2 and 4
// VL layers, and compares a SHA-256 of each complete route set (every
// switch's LFT, the engine's bookkeeping, the verifier's report, the
// multipath statistics) with testdata/golden_routes.json. It also holds
// the configurations the engines must refuse, with a hash of the error
// text. A refactoring that changes one LFT entry fails it; a change of
// routes on purpose rewrites the file:
//
//	go test ./sm/routing -run TestGoldenRoutes -update
//
// (name the package alone: with ./sm/routing/... the engine packages'
// test binaries, which have no -update flag, would refuse it). -update
// needs the full set, so not with -short; -short runs the smaller cases
// only, and still checks that the file names exactly the cases there are.
var updateGolden = flag.Bool("update", false, "rewrite testdata/golden_routes.json from the routes the engines compute now")

const goldenFile = "testdata/golden_routes.json"

// goldenEntry is what the golden file holds for one case.
type goldenEntry struct {
	// Entries counts the valid LFT entries of every switch (what
	// distribution writes); LFT hashes the tables alone, so a diff tells
	// a route that moved from bookkeeping that changed.
	Entries int    `json:"entries,omitempty"`
	LFT     string `json:"lft,omitempty"`
	// Verify summarizes the verifier's report.
	Verify string `json:"verify,omitempty"`
	// Refused names the error a refused case wraps (ErrConfig,
	// ErrUnknownEngine, ErrRouting); SHA256 then hashes its text.
	Refused string `json:"refused,omitempty"`
	// SHA256 hashes everything: the tables, Default, Up, Seq, the counts,
	// the report in full and the multipath statistics.
	SHA256 string `json:"sha256"`
}

// goldenFabric is a generated fabric of the test.
type goldenFabric struct {
	name  string
	short bool // in the -short run
	gen   func() (*topologies.Topology, error)
}

// goldenVariant is an engine under one set of options.
type goldenVariant struct {
	label  string // what the case name shows of the options
	engine string
	opts   func(f *routing.Fabric) routing.Options
}

// goldenCase is one route set: a fabric at an LMC, a variant, and the
// multipath layers after it (0: the engine's routes alone).
type goldenCase struct {
	name    string
	fabric  goldenFabric
	lmc     uint8
	variant goldenVariant
	layers  int
	short   bool
}

func goldenFixed(f func() *topologies.Topology) func() (*topologies.Topology, error) {
	return func() (*topologies.Topology, error) { return f(), nil }
}

func gIrregular(n, ports, hosts int, seed uint64) goldenFabric {
	return goldenFabric{fmt.Sprintf("irregular-%d-p%d-h%d-s%d", n, ports, hosts, seed), n <= 16,
		func() (*topologies.Topology, error) { return topologies.Irregular(n, ports, hosts, seed) }}
}

func gFatTreeOf(leaves, spines, hosts int) goldenFabric {
	return goldenFabric{fmt.Sprintf("fattree-%dx%dx%d", leaves, spines, hosts), leaves*hosts <= 32,
		func() (*topologies.Topology, error) { return topologies.FatTree(leaves, spines, hosts) }}
}

func gKAryNTree(k, n int) goldenFabric {
	return goldenFabric{fmt.Sprintf("kary-%d-%d", k, n), true,
		func() (*topologies.Topology, error) { return topologies.KAryNTree(k, n) }}
}

func gRLFTOf(k, n int) goldenFabric {
	return goldenFabric{fmt.Sprintf("rlft-%d-%d", k, n), true,
		func() (*topologies.Topology, error) { return topologies.RLFT(k, n) }}
}

// gRLFTCut is RLFT(k, n) without the cable at port of switch sw.
func gRLFTCut(k, n int, sw string, port int) goldenFabric {
	return goldenFabric{fmt.Sprintf("rlft-%d-%d-cut-%s-p%d", k, n, sw, port), true, func() (*topologies.Topology, error) {
		tp, err := topologies.RLFT(k, n)
		if err != nil {
			return nil, err
		}
		i, ok := tp.Lookup(sw)
		if !ok {
			return nil, fmt.Errorf("no switch %s", sw)
		}
		cut, ok := tp.LinkAt(topologies.PortRef{Node: i, Port: port})
		if !ok {
			return nil, fmt.Errorf("%s port %d is not cabled", sw, port)
		}
		out := topologies.New()
		for _, n := range tp.Nodes() {
			if _, err := out.AddNode(*n); err != nil {
				return nil, err
			}
		}
		for _, l := range tp.Links() {
			if l != cut {
				if err := out.Connect(l.A, l.B, l.Width, l.Speed); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	}}
}

func gGrid(torus bool, dims ...int) goldenFabric {
	kind, mk := "mesh", topologies.Mesh
	if torus {
		kind, mk = "torus", topologies.Torus
	}
	var ds []string
	size := 1
	for _, d := range dims {
		ds = append(ds, fmt.Sprint(d))
		size *= d
	}
	return goldenFabric{kind + "-" + strings.Join(ds, "x"), size <= 27,
		func() (*topologies.Topology, error) { return mk(dims...) }}
}

// Fabrics.
var (
	gThesis8      = goldenFabric{"thesis8", true, goldenFixed(topologies.Thesis8)}
	gThesis8Fig   = goldenFabric{"thesis8-fig68", true, func() (*topologies.Topology, error) { return topologies.Thesis8().Extend(topologies.Thesis8AddPiece()) }}
	gDumbbell     = goldenFabric{"dumbbell", true, goldenFixed(topologies.Dumbbell)}
	gIrr8         = gIrregular(8, 4, 1, 1)
	gIrr16        = gIrregular(16, 4, 1, 1)
	gIrr16Wide    = gIrregular(16, 6, 2, 5)
	gIrr32        = gIrregular(32, 4, 1, 1)
	gFatTree      = gFatTreeOf(8, 4, 3)
	gRLFT23       = gRLFTOf(2, 3)
	gTorus44      = gGrid(true, 4, 4)
	gMesh33       = gGrid(false, 3, 3)
	goldenFabrics = []goldenFabric{
		gThesis8, gThesis8Fig, gDumbbell,
		gIrr8, gIrregular(8, 4, 1, 2), gIrregular(8, 4, 1, 3),
		gIrr16, gIrregular(16, 4, 1, 2), gIrregular(16, 4, 1, 3), gIrr16Wide,
		gIrr32, gIrregular(32, 4, 1, 2), gIrregular(32, 8, 3, 4),
		gFatTreeOf(4, 2, 2), gFatTree, gFatTreeOf(6, 3, 4), gFatTreeOf(12, 6, 6),
		gKAryNTree(2, 3), gKAryNTree(3, 2), gKAryNTree(2, 4), gKAryNTree(4, 2),
		gRLFTOf(2, 2), gRLFT23, gRLFTOf(3, 2),
		gRLFTCut(2, 3, "s1-3", 3), gRLFTCut(2, 3, "s3-1", 1),
		gMesh33, gGrid(false, 4, 4), gGrid(false, 2, 3, 2),
		gGrid(true, 3, 3), gTorus44, gGrid(true, 3, 3, 3), gGrid(true, 8, 8),
	}
)

func goldenDefaults(*routing.Fabric) routing.Options { return routing.Options{} }

// goldenLastRoot roots up*/down* at the last switch in topology order
// instead of the SM's.
func goldenLastRoot(f *routing.Fabric) routing.Options {
	s := f.Switches()
	return routing.Options{RootGUID: f.Topo.Node(s[len(s)-1]).GUID}
}

// Variants: every engine with its goldenDefaults, and the options the
// up*/down* engines honour.
var (
	vFERa           = goldenVariant{"updn-fera", "updn-fera", goldenDefaults}
	vPIRa           = goldenVariant{"updn-pira", "updn-pira", goldenDefaults}
	vDmodK          = goldenVariant{"dmodk", "dmodk", goldenDefaults}
	goldenOptionals = []goldenVariant{
		{"updn-fera+ties=random,seed=1", "updn-fera", func(*routing.Fabric) routing.Options {
			return routing.Options{FERaTies: routing.TieRandom, Seed: 1}
		}},
		{"updn-fera+root=last", "updn-fera", goldenLastRoot},
		{"updn-pira+parent=first", "updn-pira", func(*routing.Fabric) routing.Options {
			return routing.Options{Parent: routing.ParentFirst}
		}},
		{"updn-pira+parent=random,seed=1", "updn-pira", func(*routing.Fabric) routing.Options {
			return routing.Options{Parent: routing.ParentRandom, Seed: 1}
		}},
		{"updn-pira+root=last", "updn-pira", goldenLastRoot},
	}
)

// goldenIsFatTree reports whether ftree and dmodk route the fabric: the
// others they refuse (goldenRefusals has some).
func goldenIsFatTree(g goldenFabric) bool {
	return strings.HasPrefix(g.name, "fattree") || strings.HasPrefix(g.name, "kary") || strings.HasPrefix(g.name, "rlft")
}

// goldenCases lists every case, in a fixed order, without routing any.
func goldenCases() []goldenCase {
	var cases []goldenCase
	add := func(g goldenFabric, lmc uint8, v goldenVariant, layers int) {
		name := fmt.Sprintf("%s/%s/lmc%d", g.name, v.label, lmc)
		if layers > 0 {
			name += fmt.Sprintf("/mp%d", layers)
		}
		cases = append(cases, goldenCase{name: name, fabric: g, lmc: lmc, variant: v, layers: layers, short: g.short})
	}
	// Every engine on every fabric it routes, at LMC 0 (ftree and dmodk
	// refuse the fabrics that are not fat trees: goldenRefusals).
	for _, g := range goldenFabrics {
		for _, e := range routing.Engines() {
			if !goldenIsFatTree(g) && (e == "ftree" || e == "dmodk") {
				continue
			}
			add(g, 0, goldenVariant{e, e, goldenDefaults}, 0)
		}
	}
	// The options of the up*/down* engines.
	for _, g := range []goldenFabric{gThesis8, gThesis8Fig, gIrr8, gIrr16, gIrr16Wide, gIrr32, gTorus44, gMesh33, gFatTree} {
		for _, v := range goldenOptionals {
			add(g, 0, v, 0)
		}
	}
	// LMC 1 and 2: the engines' own alias routes (LMC 1), and multipath
	// over the up*/down* engines and dmodk in 1, 2 and 4 layers (layers
	// are capped at the aliases, so LMC 1 at 4 layers would be LMC 1 at
	// 2).
	for _, g := range []goldenFabric{gThesis8, gDumbbell, gIrr16, gTorus44, gFatTree, gRLFT23} {
		for _, e := range routing.Engines() {
			if !goldenIsFatTree(g) && (e == "ftree" || e == "dmodk") {
				continue
			}
			add(g, 1, goldenVariant{e, e, goldenDefaults}, 0)
		}
		vs := []goldenVariant{vFERa, vPIRa}
		if goldenIsFatTree(g) {
			vs = append(vs, vDmodK)
		}
		for _, v := range vs {
			for _, layers := range []int{1, 2} {
				add(g, 1, v, layers)
			}
			for _, layers := range []int{1, 2, 4} {
				add(g, 2, v, layers)
			}
		}
	}
	return cases
}

// goldenRefusal is a configuration the engines must refuse.
type goldenRefusal struct {
	name string
	run  func() error
}

// goldenRefusals lists the configurations the engines must refuse: the
// option values that have no name, an unknown engine, roots that are not
// switches, a fabric up*/down* cannot root, multipath without a layer,
// and ftree and dmodk on fabrics that are not fat trees (the error names
// what is not).
func goldenRefusals() []goldenRefusal {
	onFabric := func(topo func() (*topologies.Topology, error), lmc uint8, engine string, o func(*routing.Fabric) routing.Options) func() error {
		return func() error {
			tp, err := topo()
			if err != nil {
				return fmt.Errorf("topology: %v", err) // not a routing error: fails the test
			}
			f, err := routing.NewFabric(tp, 0, 1, lmc)
			if err != nil {
				return fmt.Errorf("fabric: %v", err)
			}
			e, err := routing.NewEngine(engine, o(f))
			if err != nil {
				return err
			}
			_, err = e.Route(f)
			return err
		}
	}
	newEngine := func(name string, o routing.Options) func() error {
		return func() error { _, err := routing.NewEngine(name, o); return err }
	}
	caRoot := func(f *routing.Fabric) routing.Options { return routing.Options{RootGUID: f.Topo.Node(0).GUID} }
	noRoot := func(*routing.Fabric) routing.Options { return routing.Options{RootGUID: 0xdead} }
	var rs []goldenRefusal
	rs = append(rs,
		goldenRefusal{"unknown-engine-dor", newEngine("dor", routing.Options{})},
		goldenRefusal{"unknown-engine-empty", newEngine("", routing.Options{})},
		goldenRefusal{"updn-pira-parent-3", newEngine("updn-pira", routing.Options{Parent: routing.ParentRandom + 1})},
		goldenRefusal{"updn-pira-parent-255", newEngine("updn-pira", routing.Options{Parent: 255})},
		goldenRefusal{"updn-fera-ties-2", newEngine("updn-fera", routing.Options{FERaTies: routing.TieRandom + 1})},
		goldenRefusal{"updn-fera-ties-255", newEngine("updn-fera", routing.Options{FERaTies: 255})},
	)
	for _, e := range []string{"updn-fera", "updn-pira"} {
		rs = append(rs,
			goldenRefusal{"thesis8/" + e + "/root-is-a-ca", onFabric(gThesis8.gen, 0, e, caRoot)},
			goldenRefusal{"thesis8/" + e + "/root-not-in-fabric", onFabric(gThesis8.gen, 0, e, noRoot)},
			goldenRefusal{"split/" + e, onFabric(goldenSplit, 0, e, goldenDefaults)},
		)
	}
	for _, g := range []goldenFabric{gThesis8, gDumbbell, gIrr16, gMesh33, gGrid(true, 3, 3)} {
		for _, e := range []string{"ftree", "dmodk"} {
			rs = append(rs, goldenRefusal{g.name + "/" + e, onFabric(g.gen, 0, e, goldenDefaults)})
		}
	}
	for _, layers := range []int{0, -1} {
		rs = append(rs, goldenRefusal{fmt.Sprintf("thesis8/multipath-layers-%d", layers), func() error {
			f, err := routing.NewFabric(topologies.Thesis8(), 0, 1, 1)
			if err != nil {
				return fmt.Errorf("fabric: %v", err)
			}
			e, err := routing.NewEngine("updn-pira", routing.Options{})
			if err != nil {
				return fmt.Errorf("engine: %v", err)
			}
			base, err := e.Route(f)
			if err != nil {
				return fmt.Errorf("route: %v", err)
			}
			_, _, err = multipath.Route(f, base, layers, routing.Options{})
			return err
		}})
	}
	return rs
}

// goldenSplit is two switches with a CA each and no cable between them.
func goldenSplit() (*topologies.Topology, error) {
	t := topologies.New()
	for i := range 2 {
		ca, err := t.AddNode(topologies.Node{Type: topologies.CA, Name: fmt.Sprintf("ca%d", i), NumPorts: 1, GUID: uint64(0x100 + i*0x10)})
		if err != nil {
			return nil, err
		}
		sw, err := t.AddNode(topologies.Node{Type: topologies.Switch, Name: fmt.Sprintf("sw%d", i), NumPorts: 2, GUID: uint64(0x200 + i*0x10)})
		if err != nil {
			return nil, err
		}
		if err := t.Connect(topologies.PortRef{Node: sw, Port: 1}, topologies.PortRef{Node: ca, Port: 1}, 0, 0); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// goldenErrClass names the routing sentinel err wraps.
func goldenErrClass(err error) string {
	for _, s := range []struct {
		name string
		err  error
	}{{"ErrUnknownEngine", routing.ErrUnknownEngine}, {"ErrConfig", routing.ErrConfig}, {"ErrRouting", routing.ErrRouting}} {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	return ""
}

func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

func goldenRefused(err error) goldenEntry {
	h := sha256.New()
	fmt.Fprintf(h, "refused %s\n", err)
	return goldenEntry{Refused: goldenErrClass(err), SHA256: hexSum(h)}
}

// goldenDigest serializes a route set canonically: the tables in node order
// (with each switch's name and GUID), Default, Up, Seq, the counts, the
// verifier's report and the multipath statistics.
func goldenDigest(f *routing.Fabric, r *routing.Routes, rep *routing.Report, st *multipath.Stats) goldenEntry {
	all, lft := sha256.New(), sha256.New()
	fmt.Fprintf(all, "engine %q maxlid %d layers %d exempt %t computed %d default-ports %d\n",
		r.Engine, r.MaxLID, r.Layers, r.SwitchLIDsExempt, r.Computed, r.DefaultPorts)
	fmt.Fprintf(all, "per-step %v\n", r.PerStep)
	fmt.Fprintf(all, "tables %d\n", len(r.LFT))
	fmt.Fprintf(lft, "maxlid %d tables %d\n", r.MaxLID, len(r.LFT))
	for i, t := range r.LFT {
		if t == nil {
			continue
		}
		n := f.Topo.Node(i)
		line := fmt.Sprintf("lft %d %s %#x %d %s\n", i, n.Name, n.GUID, len(t), hex.EncodeToString(t))
		all.Write([]byte(line))
		lft.Write([]byte(line))
	}
	if r.Default != nil {
		fmt.Fprintf(all, "default %s\n", hex.EncodeToString(r.Default))
	}
	if r.Up != nil {
		fmt.Fprintf(all, "up %d\n", len(r.Up))
		for i, u := range r.Up {
			if u == nil {
				continue
			}
			b := make([]byte, len(u))
			for p, up := range u {
				b[p] = '0'
				if up {
					b[p] = '1'
				}
			}
			fmt.Fprintf(all, "up %d %s\n", i, b)
		}
	}
	if r.Seq != nil {
		fmt.Fprintf(all, "seq %d\n", len(r.Seq))
		for i, q := range r.Seq {
			if q != nil {
				fmt.Fprintf(all, "seq %d %v\n", i, q)
			}
		}
	}
	fmt.Fprintf(all, "verify pairs %d unconnected %d channels %d deps %d cycle-layer %d down-up %d\n",
		rep.Pairs, rep.Unconnected, rep.Channels, rep.Deps, rep.CycleLayer, rep.DownUp)
	fmt.Fprintf(all, "failures %q\ncycle %q\n", rep.Failures, rep.Cycle)
	if st != nil {
		fmt.Fprintf(all, "multipath aliases %d layers %d trees %d fallbacks %d updn %d reserve %d by-alias %v\n",
			st.Aliases, st.Layers, st.Trees, st.Fallbacks, st.Updn, st.Reserve, st.FallbacksByAlias)
		// The means are ratios of integer counts; 9 digits hold them
		// whatever the rounding of the last bit.
		fmt.Fprintf(all, "mean-hops %.9g\nmean-hops-by-alias %.9g\ndisjoint %.9g\n", st.MeanHops, st.MeanHopsByAlias, st.Disjoint)
	}
	entries := 0
	for _, t := range r.LFT {
		for _, p := range t {
			if p != mad.LFTNoPort {
				entries++
			}
		}
	}
	verify := "ok"
	if err := rep.Err(); err != nil {
		verify = fmt.Sprintf("unconnected %d, cycle %d (layer %d), down-up %d", rep.Unconnected, len(rep.Cycle), rep.CycleLayer, rep.DownUp)
	}
	verify = fmt.Sprintf("%s: %d pairs, %d deps", verify, rep.Pairs, rep.Deps)
	return goldenEntry{Entries: entries, LFT: hexSum(lft), Verify: verify, SHA256: hexSum(all)}
}

// runGoldenCase routes one case; an error is a refusal, recorded as such.
func runGoldenCase(f *routing.Fabric, c goldenCase) goldenEntry {
	o := c.variant.opts(f)
	e, err := routing.NewEngine(c.variant.engine, o)
	if err != nil {
		return goldenRefused(err)
	}
	r, err := e.Route(f)
	if err != nil {
		return goldenRefused(err)
	}
	var st *multipath.Stats
	if c.layers > 0 {
		if r, st, err = multipath.Route(f, r, c.layers, o); err != nil {
			return goldenRefused(err)
		}
	}
	return goldenDigest(f, r, routing.Verify(f, r), st)
}

// goldenData is the golden file.
type goldenData struct {
	Routes   map[string]goldenEntry `json:"routes"`
	Refusals map[string]goldenEntry `json:"refusals"`
}

func TestGoldenRoutes(t *testing.T) {
	if *updateGolden && testing.Short() {
		t.Fatal("-update rewrites every case: run it without -short")
	}
	cases, refusals := goldenCases(), goldenRefusals()
	got := goldenData{Routes: map[string]goldenEntry{}, Refusals: map[string]goldenEntry{}}

	type fkey struct {
		name string
		lmc  uint8
	}
	fabrics := map[fkey]*routing.Fabric{}
	fabric := func(c goldenCase) *routing.Fabric {
		k := fkey{c.fabric.name, c.lmc}
		if f := fabrics[k]; f != nil {
			return f
		}
		tp, err := c.fabric.gen()
		require.NoError(t, err, c.fabric.name)
		f, err := routing.NewFabric(tp, 0, 1, c.lmc)
		require.NoError(t, err, c.fabric.name)
		fabrics[k] = f
		return f
	}
	ran := 0
	for _, c := range cases {
		if _, dup := got.Routes[c.name]; dup {
			t.Fatalf("case %s listed twice", c.name)
		}
		if testing.Short() && !c.short {
			got.Routes[c.name] = goldenEntry{} // named, not run
			continue
		}
		got.Routes[c.name] = runGoldenCase(fabric(c), c)
		ran++
	}
	for _, r := range refusals {
		err := r.run()
		if err == nil || goldenErrClass(err) == "" {
			t.Errorf("refusal %s: want a routing error, got %v", r.name, err)
			continue
		}
		got.Refusals[r.name] = goldenRefused(err)
	}

	path := filepath.FromSlash(goldenFile)
	if *updateGolden {
		b, err := json.MarshalIndent(got, "", "\t")
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
		t.Logf("wrote %s: %d route sets, %d refusals", goldenFile, len(got.Routes), len(got.Refusals))
		return
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err, "no golden file: go test ./sm/routing -run TestGoldenRoutes -update")
	var want goldenData
	require.NoError(t, json.Unmarshal(b, &want), goldenFile)

	compare := func(kind string, want, got map[string]goldenEntry, runs func(string) bool) {
		names := func(m map[string]goldenEntry) []string {
			var s []string
			for n := range m {
				s = append(s, n)
			}
			slices.Sort(s)
			return s
		}
		for _, n := range names(want) {
			if _, ok := got[n]; !ok {
				t.Errorf("%s %s: in %s but no longer a case", kind, n, goldenFile)
			}
		}
		for _, n := range names(got) {
			w, ok := want[n]
			switch {
			case !ok:
				t.Errorf("%s %s: a case %s lacks (-update adds it)", kind, n, goldenFile)
			case !runs(n):
			case w != got[n]:
				g := got[n]
				what := "changed"
				switch {
				case w.Refused != g.Refused:
					what = fmt.Sprintf("refused %q, was %q", g.Refused, w.Refused)
				case w.Refused != "":
					what = "refused with another error"
				case w.LFT != g.LFT:
					what = fmt.Sprintf("LFTs changed: %d entries, were %d", g.Entries, w.Entries)
				default:
					what = "same LFTs, other bookkeeping or verifier report"
				}
				t.Errorf("%s %s: %s\n\twant %+v\n\tgot  %+v", kind, n, what, w, g)
			}
		}
	}
	short := map[string]bool{}
	for _, c := range cases {
		short[c.name] = c.short
	}
	compare("route set", want.Routes, got.Routes, func(n string) bool { return !testing.Short() || short[n] })
	compare("refusal", want.Refusals, got.Refusals, func(string) bool { return true })
	t.Logf("%d of %d route sets compared, %d refusals", ran, len(cases), len(refusals))
}
