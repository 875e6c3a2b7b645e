package layering

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// stringerDirective is the go:generate line every enum's String comes
// from: stringer, run as the tool go.mod pins.
const stringerDirective = "//go:generate go tool stringer "

// TestStringerCurrent runs every stringer directive of the tree again,
// into a temporary directory, and fails when a committed *_string.go
// differs from what it gives (run `go generate` in that package) or when
// a directive's output is not committed.
func TestStringerCurrent(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	stringer := filepath.Join(tmp, "stringer")
	build := exec.Command("go", "build", "-o", stringer, "golang.org/x/tools/cmd/stringer")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building stringer: %v\n%s", err, out)
	}
	n := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin" || name == "out") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_string.go") {
			return nil
		}
		args, err := directives(path)
		if err != nil {
			return err
		}
		for _, a := range args {
			n++
			rel, _ := filepath.Rel(root, path)
			t.Run(rel+":"+a, func(t *testing.T) { checkStringer(t, stringer, tmp, filepath.Dir(path), a) })
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no stringer directives found")
	}
}

// directives returns the arguments of the stringer directives in file.
func directives(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), stringerDirective); ok {
			out = append(out, strings.TrimSpace(a))
		}
	}
	return out, sc.Err()
}

// checkStringer runs stringer with args in dir, writing to a file of its
// own, and compares it with the committed output. stringer's header names
// its arguments, so -output's is taken out of it.
func checkStringer(t *testing.T, stringer, tmp, dir, args string) {
	fields := strings.Fields(args)
	committed := ""
	for _, f := range fields {
		if v, ok := strings.CutPrefix(f, "-type="); ok {
			committed = strings.ToLower(strings.Split(v, ",")[0]) + "_string.go"
		}
		if strings.HasPrefix(f, "-output") {
			t.Fatalf("directive sets -output; the test expects stringer's default name")
		}
	}
	if committed == "" {
		t.Fatalf("directive has no -type=")
	}
	out := filepath.Join(tmp, strings.ReplaceAll(dir, string(filepath.Separator), "_")+"_"+committed)
	cmd := exec.Command(stringer, append([]string{"-output", out}, fields...)...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("stringer %s: %v\n%s", args, err, b)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want = bytes.Replace(want, []byte(fmt.Sprintf(`"stringer -output %s `, out)), []byte(`"stringer `), 1)
	got, err := os.ReadFile(filepath.Join(dir, committed))
	if err != nil {
		t.Fatalf("%s not committed (run go generate in %s): %v", committed, dir, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: run go generate in %s", committed, dir)
	}
}
