package hca

import (
	"bytes"
	"testing"
)

func TestFlowTag(t *testing.T) {
	tests := []struct {
		name    string
		payload func() []byte
		want    FlowTag
		ok      bool
	}{
		{name: "flow", payload: func() []byte {
			b := make([]byte, 64)
			putStamp(b, 12345)
			PutFlowTag(b, FlowTag{ID: 0xdeadbeef, Seq: 1 << 40})
			return b
		}, want: FlowTag{ID: 0xdeadbeef, Seq: 1 << 40}, ok: true},
		{name: "exactly the header", payload: func() []byte {
			b := make([]byte, FlowHeaderSize)
			putStamp(b, 1)
			PutFlowTag(b, FlowTag{ID: 7, Seq: 3})
			return b
		}, want: FlowTag{ID: 7, Seq: 3}, ok: true},
		{name: "generator payload: stamp then zeros", payload: func() []byte {
			b := make([]byte, 2048)
			putStamp(b, 99)
			return b
		}},
		{name: "tag without stamp", payload: func() []byte {
			b := make([]byte, 64)
			PutFlowTag(b, FlowTag{ID: 1})
			return b
		}},
		{name: "one byte short", payload: func() []byte {
			b := make([]byte, FlowHeaderSize)
			putStamp(b, 1)
			PutFlowTag(b, FlowTag{ID: 1})
			return b[:FlowHeaderSize-1]
		}},
		{name: "empty", payload: func() []byte { return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ReadFlowTag(tt.payload())
			if ok != tt.ok || got != tt.want {
				t.Errorf("ReadFlowTag() = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// FuzzFlowTag: ReadFlowTag never panics, and a tag it reads is written
// back to the same bytes, with the stamp and the rest of the payload
// untouched.
func FuzzFlowTag(f *testing.F) {
	b := make([]byte, FlowHeaderSize+4)
	putStamp(b, 1_000_000)
	PutFlowTag(b, FlowTag{ID: 42, Seq: 9})
	f.Add(b)
	f.Add(make([]byte, FlowHeaderSize))
	f.Add([]byte("ibfa"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tag, ok := ReadFlowTag(data)
		if !ok {
			return
		}
		out := append([]byte(nil), data...)
		PutFlowTag(out, tag)
		if !bytes.Equal(out, data) {
			t.Fatalf("tag %+v rewrites %x as %x", tag, data, out)
		}
	})
}
