package link_test

import (
	"errors"
	"testing"

	"ibfab/link"
	"ibfab/wire"
)

func TestKind(t *testing.T) {
	tests := []struct {
		name      string
		kind      link.Kind
		etherType uint16
		str       string
	}{
		{"data", link.KindData, wire.EtherTypeData, "data"},
		{"link", link.KindLink, wire.EtherTypeLink, "link"},
		{"training", link.KindTraining, link.EtherTypeTraining, "training"},
		{"unknown", 7, 0, "Kind(7)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.kind.EtherType(); got != tt.etherType {
				t.Errorf("EtherType() = %#x, want %#x", got, tt.etherType)
			}
			if got := tt.kind.String(); got != tt.str {
				t.Errorf("String() = %q, want %q", got, tt.str)
			}
			if tt.etherType == 0 {
				return
			}
			if k, ok := link.KindOf(tt.etherType); !ok || k != tt.kind {
				t.Errorf("KindOf(%#x) = %v, %v, want %v, true", tt.etherType, k, ok, tt.kind)
			}
		})
	}
	for _, et := range []uint16{0, 0x0800, 0x86dd, 0x88b4, 0x88b8} {
		if k, ok := link.KindOf(et); ok {
			t.Errorf("KindOf(%#x) = %v, true, want false", et, k)
		}
	}
}

func TestCheckPacket(t *testing.T) {
	tests := []struct {
		name string
		kind link.Kind
		n    int
		want error
	}{
		{"data", link.KindData, 100, nil},
		{"link", link.KindLink, wire.FlowControlSize, nil},
		{"largest", link.KindData, link.MaxPacketSize, nil},
		{"too large", link.KindData, link.MaxPacketSize + 1, link.ErrSize},
		{"empty", link.KindLink, 0, link.ErrSize},
		{"negative", link.KindData, -1, link.ErrSize},
		{"kind 0", 0, 10, link.ErrKind},
		{"training", link.KindTraining, link.TrainingSize, nil},
		{"kind 4", 4, 10, link.ErrKind},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := link.CheckPacket(tt.kind, tt.n); !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("CheckPacket(%v, %d) = %v, want %v", tt.kind, tt.n, err, tt.want)
			}
		})
	}
}
