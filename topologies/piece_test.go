package topologies_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ibfab/topologies"
)

// TestPieceRoundTrip: WritePiece then ParsePiece gives the piece back, and
// the parsed piece extends the base like the original.
func TestPieceRoundTrip(t *testing.T) {
	want := topologies.Thesis8AddPiece()
	var b bytes.Buffer
	if err := topologies.WritePiece(&b, want); err != nil {
		t.Fatal(err)
	}
	got, err := topologies.ParsePiece(&b, "piece")
	if err != nil {
		t.Fatalf("ParsePiece: %v\n%s", err, b.String())
	}
	if !got.Topology.Equal(want.Topology) {
		t.Error("the piece's own nodes and links differ")
	}
	if len(got.Attachments) != len(want.Attachments) {
		t.Fatalf("attachments %+v, want %+v", got.Attachments, want.Attachments)
	}
	for i, a := range want.Attachments {
		a.Width, a.Speed = topologies.DefaultWidth, topologies.DefaultSpeed
		if got.Attachments[i] != a {
			t.Errorf("attachment %d: %+v, want %+v", i, got.Attachments[i], a)
		}
	}
	u1, err := topologies.Thesis8().Extend(want)
	if err != nil {
		t.Fatal(err)
	}
	u2, err := topologies.Thesis8().Extend(got)
	if err != nil {
		t.Fatal(err)
	}
	if !u1.Equal(u2) {
		t.Error("the parsed piece extends thesis8 differently")
	}

	dir := t.TempDir()
	name := filepath.Join(dir, "piece.net")
	if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// b was consumed; write the file again for ParsePieceFile.
	b.Reset()
	if err := topologies.WritePiece(&b, want); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	fromFile, err := topologies.ParsePieceFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !fromFile.Topology.Equal(want.Topology) || len(fromFile.Attachments) != 2 {
		t.Error("ParsePieceFile differs from ParsePiece")
	}
}

func TestParsePieceRates(t *testing.T) {
	p, err := topologies.ParsePiece(strings.NewReader(
		"Switch 2 \"n\"\n[1] \"old\"[4] # \"old\" lid 0 4xQDR\n[2] \"other\"[1] w=3 s=3\n"), "rates")
	if err != nil {
		t.Fatal(err)
	}
	want := []topologies.Attachment{
		{Node: "n", Port: 1, BaseNode: "old", BasePort: 4, Width: topologies.Width4x, Speed: topologies.SpeedQDR},
		{Node: "n", Port: 2, BaseNode: "other", BasePort: 1, Width: topologies.Width4x, Speed: topologies.SpeedDDR},
	}
	if len(p.Attachments) != len(want) {
		t.Fatalf("attachments %+v, want %+v", p.Attachments, want)
	}
	for i := range want {
		if p.Attachments[i] != want[i] {
			t.Errorf("attachment %d: %+v, want %+v", i, p.Attachments[i], want[i])
		}
	}
}

func TestParsePieceErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       error
	}{
		{"empty", "# nothing\n", topologies.ErrSyntax},
		{"internal link one-sided", "Switch 2 \"a\"\n[1] \"b\"[1]\n\nCa 1 \"b\"\n", topologies.ErrAsymmetric},
		{"internal link to a wrong port", "Switch 2 \"a\"\n[1] \"b\"[1]\n\nCa 1 \"b\"\n[1] \"a\"[2]\n", topologies.ErrAsymmetric},
		{"internal port out of range", "Switch 2 \"a\"\n[1] \"b\"[3]\n\nSwitch 2 \"b\"\n[1] \"a\"[1]\n", topologies.ErrPortRange},
		{"own port out of range", "Switch 2 \"a\"\n[3] \"old\"[1]\n", topologies.ErrPortRange},
		{"duplicate name", "Switch 2 \"a\"\n\nSwitch 2 \"a\"\n", topologies.ErrDuplicateName},
		{"two cables to one base port", "Switch 2 \"a\"\n[1] \"old\"[1]\n[2] \"old\"[1]\n", topologies.ErrPortInUse},
		{"empty base name", "Switch 2 \"a\"\n[1] \"\"[1]\n", topologies.ErrInvalid},
		{"garbage", "Switch 2 \"a\"\nhello\n", topologies.ErrSyntax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := topologies.ParsePiece(strings.NewReader(tc.file), tc.name)
			if !errors.Is(err, tc.want) {
				t.Fatalf("ParsePiece = %v, want %v", err, tc.want)
			}
			if p != nil {
				t.Error("a piece with the error")
			}
			var pe *topologies.ParseError
			if !errors.As(err, &pe) || pe.Line < 1 {
				t.Errorf("error %v has no line", err)
			}
		})
	}
}

// FuzzParsePiece: ParsePiece returns a piece or an error, never panics; a
// piece it returns survives WritePiece and ParsePiece unchanged.
func FuzzParsePiece(f *testing.F) {
	var b bytes.Buffer
	if err := topologies.WritePiece(&b, topologies.Thesis8AddPiece()); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add([]byte("Switch 2 \"n\"\n[1] \"old\"[4] # \"old\" lid 0 4xQDR\n[2] \"other\"[1] w=3 s=3\n"))
	f.Add([]byte("Ca 2 \"h\"\n[1](11) \"s\"[1]\n[2](12) \"old\"[7]\n\nSwitch 4 \"s\"\n[1] \"h\"[1]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := topologies.ParsePiece(bytes.NewReader(data), "fuzz")
		if err != nil {
			if p != nil {
				t.Fatalf("ParsePiece(%q) = %v and a piece", data, err)
			}
			return
		}
		var out bytes.Buffer
		if err := topologies.WritePiece(&out, p); err != nil {
			t.Fatalf("WritePiece: %v", err)
		}
		again, err := topologies.ParsePiece(bytes.NewReader(out.Bytes()), "rewritten")
		if err != nil {
			t.Fatalf("ParsePiece(WritePiece(ParsePiece(%q))) = %v\n%s", data, err, out.Bytes())
		}
		if !again.Topology.Equal(p.Topology) || len(again.Attachments) != len(p.Attachments) {
			t.Fatalf("piece changed through WritePiece:\n%s", out.Bytes())
		}
		for i := range p.Attachments {
			if again.Attachments[i] != p.Attachments[i] {
				t.Fatalf("attachment %d: %+v, then %+v", i, p.Attachments[i], again.Attachments[i])
			}
		}
	})
}
