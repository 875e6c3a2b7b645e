package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The testdata files are `go test -json` of a package with these tests:
// fail_skip.jsonl TestA (logs; subtest sub1 fails, sub2 skips), TestB
// (passes), TestC (logs, then skips); pass.jsonl TestA with a subtest and
// TestB, all passing; build_fail.jsonl a package that does not compile.
func TestRun(t *testing.T) {
	tests := []struct {
		file   string
		status int
		out    string
	}{
		{"pass.jsonl", 0, "ok  \tevt\t0.006s\n\nslowest tests:\n     0.0s\tevt\tTestA\n     0.0s\tevt\tTestB\n"},
		{"pass_skip.jsonl", 1, `ok  	evt	0.004s

slowest tests:
     0.0s	evt	TestA

1 skipped tests (every test must run here):
SKIP	evt	TestC	a_test.go:4: needs root (network namespaces, veth pairs, raw sockets, eBPF)
`},
		{"fail_skip.jsonl", 1, `--- FAIL: TestA (0.00s)
    a_test.go:4: a log
    --- FAIL: TestA/sub1 (0.00s)
        a_test.go:5: sub1 log
        a_test.go:5: sub1 err
FAIL
FAIL	evt	0.003s

slowest tests:
     0.0s	evt	TestA
     0.0s	evt	TestB

2 skipped tests (every test must run here):
SKIP	evt	TestA/sub2	a_test.go:6: sub2 skip reason
SKIP	evt	TestC	a_test.go:9: c reason
`},
		{"build_fail.jsonl", 1, "# evt [evt.test]\n./b.go:2:12: undefined: undefined\nFAIL\tevt [build failed]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			status := 0
			if strings.Contains(tt.out, "FAIL\t") {
				status = 1 // go test's own exit status
			}
			var stdout, stderr bytes.Buffer
			got := run(catCommand(t, tt.file, status), &stdout, &stderr)
			if got != tt.status {
				t.Errorf("exit status %d, want %d", got, tt.status)
			}
			if stdout.String() != tt.out {
				t.Errorf("printed:\n%s\nwant:\n%s", stdout.String(), tt.out)
			}
			if stderr.Len() > 0 {
				t.Errorf("stderr: %s", stderr.String())
			}
		})
	}
}

// TestRunWithoutJSON: output that holds no test event (go test without
// -json) fails, and is passed on.
func TestRunWithoutJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	got := run([]string{"sh", "-c", "echo 'ok  \tevt\t0.1s'"}, &stdout, &stderr)
	if got == 0 {
		t.Error("exit status 0 without test events")
	}
	if stdout.String() != "ok  \tevt\t0.1s\n" {
		t.Errorf("printed %q", stdout.String())
	}
	if !strings.Contains(stderr.String(), "-json") {
		t.Errorf("stderr %q does not say to use -json", stderr.String())
	}
}

// TestUnfinished: a package that dies with a test running (a timeout's
// panic) prints that test as failed.
func TestUnfinished(t *testing.T) {
	var out bytes.Buffer
	f := newFilter(&out)
	in := `{"Action":"run","Package":"p","Test":"TestHang"}
{"Action":"output","Package":"p","Test":"TestHang","Output":"=== RUN   TestHang\n"}
{"Action":"output","Package":"p","Test":"TestHang","Output":"    x_test.go:3: waiting\n"}
{"Action":"output","Package":"p","Output":"panic: test timed out after 1s\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t1.0s\n"}
{"Action":"fail","Package":"p","Elapsed":1}
`
	if err := f.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	want := "panic: test timed out after 1s\nFAIL\tp\t1.0s\n--- FAIL: TestHang (did not finish)\n    x_test.go:3: waiting\n"
	if out.String() != want {
		t.Errorf("printed:\n%s\nwant:\n%s", out.String(), want)
	}
}

// catCommand is a command that prints testdata/file and exits with status.
func catCommand(t *testing.T, file string, status int) []string {
	path, err := filepath.Abs(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	return []string{"sh", "-c", `cat "$0"; exit "$1"`, path, string(rune('0' + status))}
}

// TestReportSlowest: slowest first, at most slowestShown of them.
func TestReportSlowest(t *testing.T) {
	f := newFilter(&bytes.Buffer{})
	for i := range slowestShown + 5 {
		f.times = append(f.times, timing{"p", "Test" + string(rune('A'+i)), float64(i)})
	}
	var out bytes.Buffer
	f.reportSlowest(&out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1+slowestShown {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	if want := "    19.0s\tp\tTestT"; lines[1] != want {
		t.Errorf("first %q, want %q", lines[1], want)
	}
}

// TestTimedParallel: a top-level test whose subtests ran in parallel
// (itself reported as 0 s) takes its longest subtest's time.
func TestTimedParallel(t *testing.T) {
	f := newFilter(&bytes.Buffer{})
	f.timed("p", "TestA/x", 3)
	f.timed("p", "TestA/y", 5)
	f.timed("p", "TestA", 0)
	f.timed("p", "TestB", 1)
	if len(f.times) != 2 || f.times[0].seconds != 5 || f.times[1].seconds != 1 {
		t.Errorf("times %+v", f.times)
	}
}
