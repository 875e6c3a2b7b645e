package layering

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const module = "ibfab"

// kind is where a package sits: a numbered layer, or one of the two kinds
// no production package may import.
type kind int

const (
	testSupport kind = -1
	testsOnly   kind = -2
)

// layerRow matches a row of the layer table: "| 3 agents | `agent`, … |".
var layerRow = regexp.MustCompile("^\\| (\\d+ [a-z ]+|test support|tests only) \\| (`.*`) \\|$")

// readLayers parses the table of docs/DESIGN.md into package → kind.
func readLayers(t *testing.T, file string) map[string]kind {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	layers := map[string]kind{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := layerRow.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		var k kind
		switch m[1] {
		case "test support":
			k = testSupport
		case "tests only":
			k = testsOnly
		default:
			n, _ := strconv.Atoi(strings.Fields(m[1])[0])
			k = kind(n)
		}
		for _, cell := range strings.Split(m[2], ",") {
			pkg := strings.Trim(strings.TrimSpace(cell), "`")
			if prev, dup := layers[pkg]; dup {
				t.Errorf("%s: %s placed twice (%d and %d)", file, pkg, prev, k)
			}
			layers[pkg] = k
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(layers) < 10 {
		t.Fatalf("%s: only %d packages in the layer table: has its format changed?", file, len(layers))
	}
	return layers
}

type listed struct {
	ImportPath string
	Imports    []string
}

// goList lists the module's packages with their non-test imports.
func goList(t *testing.T, root string) []listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listed
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// violation says what is wrong with from importing to, or "".
func violation(from, to kind) string {
	switch {
	case from == testSupport || from == testsOnly:
		return "" // test code may use anything
	case to == testSupport || to == testsOnly:
		return "a package a binary may link imports test support"
	case to > from:
		return fmt.Sprintf("layer %d imports layer %d, above it", from, to)
	}
	return ""
}

func TestViolation(t *testing.T) {
	for _, tc := range []struct {
		from, to kind
		bad      bool
	}{
		{3, 1, false}, {3, 3, false}, {3, 4, true},
		{8, testSupport, true}, {0, testsOnly, true},
		{testSupport, 8, false}, {testsOnly, testSupport, false},
	} {
		if got := violation(tc.from, tc.to) != ""; got != tc.bad {
			t.Errorf("violation(%d, %d) = %v, want %v", tc.from, tc.to, got, tc.bad)
		}
	}
}

func TestLayers(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	layers := readLayers(t, filepath.Join(root, "docs", "DESIGN.md"))
	seen := map[string]bool{}
	for _, p := range goList(t, root) {
		name := strings.TrimPrefix(p.ImportPath, module+"/")
		from, ok := layers[name]
		if !ok {
			t.Errorf("%s is not in docs/DESIGN.md's layer table: place it", name)
			continue
		}
		seen[name] = true
		for _, imp := range p.Imports {
			dep, ours := strings.CutPrefix(imp, module+"/")
			if !ours {
				continue
			}
			if why := violation(from, layers[dep]); why != "" {
				t.Errorf("%s imports %s: %s", name, dep, why)
			}
		}
	}
	for name := range layers {
		if !seen[name] {
			t.Errorf("docs/DESIGN.md's layer table names %s, which is not a package", name)
		}
	}
}
