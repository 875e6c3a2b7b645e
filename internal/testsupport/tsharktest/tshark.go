package tsharktest

import (
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ibfab/capture"
	"ibfab/internal/testsupport/testenv"
)

// Field is one decoded field of a tshark PDML dissection.
type Field struct {
	Name  string // display-filter name, e.g. "infiniband.lrh.dlid"
	Show  string // the value as tshark shows it
	Value string // the raw bytes in hex, when tshark gives them
}

// Packet is one frame's dissection, its fields flattened in tree order.
type Packet struct {
	Protocols []string
	Fields    []Field
}

// All returns the shown values of every field called name.
func (p Packet) All(name string) []string {
	var out []string
	for _, f := range p.Fields {
		if f.Name == name {
			out = append(out, f.Show)
		}
	}
	return out
}

// Get returns the first shown value of field name and whether it exists.
func (p Packet) Get(name string) (string, bool) {
	for _, f := range p.Fields {
		if f.Name == name {
			return f.Show, true
		}
	}
	return "", false
}

// Uint returns field name parsed as an unsigned number (decimal or 0x hex).
func (p Packet) Uint(t testing.TB, name string) uint64 {
	t.Helper()
	s, ok := p.Get(name)
	if !ok {
		t.Fatalf("tshark decoded no field %q; fields: %s", name, p.names())
	}
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		t.Fatalf("tshark field %q = %q, not a number: %v", name, s, err)
	}
	return v
}

// Problems lists what tshark flagged as malformed or as an expert error.
func (p Packet) Problems() []string {
	var out []string
	for _, pr := range p.Protocols {
		if pr == "_ws.malformed" {
			out = append(out, "malformed packet")
		}
	}
	for _, f := range p.Fields {
		if f.Name == "_ws.expert.severity" && f.Show == expertSeverityError {
			out = append(out, "expert error")
		}
	}
	return out
}

// expertSeverityError is PI_ERROR as tshark prints it in PDML.
const expertSeverityError = "8388608"

func (p Packet) names() string {
	var b strings.Builder
	for _, f := range p.Fields {
		b.WriteString(f.Name)
		b.WriteByte(' ')
	}
	return b.String()
}

// Decode writes recs into an ERF pcap, runs tshark on it with no options but
// the output format, and returns one Packet per record. The test fails when
// tshark is missing: the README's test command installs it.
func Decode(t testing.TB, recs []capture.Record) []Packet {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cross.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := capture.NewWriter(f)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Unix(1_700_000_000, 0)
	for i, r := range recs {
		if r.Time.IsZero() {
			r.Time = ts.Add(time.Duration(i) * time.Microsecond)
		}
		if err := w.WritePacket(r.Type, r.Time, r.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return DecodeFile(t, path)
}

// DecodeFile runs tshark on a capture file and returns its packets.
func DecodeFile(t testing.TB, path string) []Packet {
	t.Helper()
	testenv.RequireProgram(t, "tshark", "tshark")
	var stderr bytes.Buffer
	cmd := exec.Command("tshark", "-n", "-r", path, "-T", "pdml")
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir()) // no user profile
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark -r %s: %v\n%s", path, err, stderr.String())
	}
	pkts, err := parsePDML(out)
	if err != nil {
		t.Fatalf("parsing tshark PDML: %v", err)
	}
	return pkts
}

type pdmlField struct {
	Name   string      `xml:"name,attr"`
	Show   string      `xml:"show,attr"`
	Value  string      `xml:"value,attr"`
	Fields []pdmlField `xml:"field"`
	Protos []pdmlProto `xml:"proto"`
}

type pdmlProto struct {
	Name   string      `xml:"name,attr"`
	Fields []pdmlField `xml:"field"`
}

type pdmlPacket struct {
	Protos []pdmlProto `xml:"proto"`
}

type pdml struct {
	Packets []pdmlPacket `xml:"packet"`
}

func parsePDML(b []byte) ([]Packet, error) {
	var doc pdml
	if err := xml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	out := make([]Packet, 0, len(doc.Packets))
	for _, dp := range doc.Packets {
		var p Packet
		var walk func(fs []pdmlField)
		walkProto := func(pr pdmlProto) {
			p.Protocols = append(p.Protocols, pr.Name)
			walk(pr.Fields)
		}
		walk = func(fs []pdmlField) {
			for _, f := range fs {
				p.Fields = append(p.Fields, Field{Name: f.Name, Show: f.Show, Value: f.Value})
				walk(f.Fields)
				for _, pr := range f.Protos {
					walkProto(pr)
				}
			}
		}
		for _, pr := range dp.Protos {
			walkProto(pr)
		}
		out = append(out, p)
	}
	return out, nil
}
