package main

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the usage blocks of docs/ibsm.md from what ibsm prints")

// usageDoc is the page that carries copies of ibsm's usage text.
var usageDoc = filepath.Join("..", "..", "docs", "ibsm.md")

// usageBlock matches one copy in usageDoc: a marker naming the arguments
// ibsm was run with, then a fenced block of what it printed.
var usageBlock = regexp.MustCompile("(?s)<!-- usage: ibsm ([^>]*?) -->\n```text\n(.*?)```\n")

// usageArgs are the runs whose output the page must carry: the command's
// own usage and each subcommand's.
var usageArgs = []string{"-h", "qos add -h", "ar set -h", "arbtable-bench -h"}

// printedUsage is what the ibsm binary bin prints when run with args. It
// is the built binary, not run: the tests register port schemes of their
// own, which the usage lists.
func printedUsage(t *testing.T, bin, args string) string {
	t.Helper()
	out, err := exec.Command(bin, strings.Fields(args)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ibsm %s: %v: %s", args, err, out)
	}
	return string(out)
}

// buildIBSM builds the binary into a temporary directory.
func buildIBSM(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ibsm")
	if out, err := exec.Command("go", "build", "-o", bin, "ibfab/cmd/ibsm").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	return bin
}

// TestUsageDoc fails when a usage block of docs/ibsm.md differs from what
// the binary prints, the one source of truth; go generate (or go test -run
// TestUsageDoc -update) rewrites the blocks.
func TestUsageDoc(t *testing.T) {
	b, err := os.ReadFile(usageDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	bin := buildIBSM(t)
	if *update {
		doc = writeUsageBlocks(t, bin, doc)
		if err := os.WriteFile(usageDoc, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	found := map[string]bool{}
	for _, m := range usageBlock.FindAllStringSubmatch(doc, -1) {
		args, text := m[1], m[2]
		if found[args] {
			t.Errorf("%s: two blocks of ibsm %s", usageDoc, args)
		}
		found[args] = true
		if want := printedUsage(t, bin, args); text != want {
			t.Errorf("%s: the block of ibsm %s differs from what it prints (go generate ./cmd/ibsm rewrites it):\n--- page\n%s--- ibsm\n%s",
				usageDoc, args, text, want)
		}
	}
	for _, args := range usageArgs {
		if !found[args] {
			t.Errorf("%s has no usage block of ibsm %s (a line <!-- usage: ibsm %s --> before a text block; go generate ./cmd/ibsm fills it)",
				usageDoc, args, args)
		}
	}
}

// writeUsageBlocks returns doc with every block filled with what ibsm
// prints; the blocks of usageArgs it lacks go in place of a line
// "<!-- usage: ibsm ARGS -->" without a block, or at the end of the page.
func writeUsageBlocks(t *testing.T, bin, doc string) string {
	t.Helper()
	doc = usageBlock.ReplaceAllStringFunc(doc, func(block string) string {
		args := usageBlock.FindStringSubmatch(block)[1]
		return usageMarker(args) + "```text\n" + printedUsage(t, bin, args) + "```\n"
	})
	for _, args := range usageArgs {
		marker := usageMarker(args)
		block := marker + "```text\n" + printedUsage(t, bin, args) + "```\n"
		switch i := strings.Index(doc, marker); {
		case i < 0:
			doc += "\n" + block
		case !strings.HasPrefix(doc[i+len(marker):], "```text\n"):
			doc = doc[:i] + block + doc[i+len(marker):]
		}
	}
	return doc
}

func usageMarker(args string) string { return "<!-- usage: ibsm " + args + " -->\n" }
