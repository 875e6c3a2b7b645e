package umadproto

import (
	"bytes"
	"errors"
	"testing"
)

func TestHelloRoundTrip(t *testing.T) {
	for _, h := range []Hello{{Role: RoleUMAD, Port: 1}, {Role: RoleControl, Port: 2, Token: 77, Errno: 22}, {Role: RoleISSM}} {
		b := AppendHello(nil, h)
		if len(b) != HelloSize {
			t.Fatalf("%d bytes", len(b))
		}
		got, err := DecodeHello(b)
		if err != nil || got != h {
			t.Errorf("DecodeHello = %+v, %v; want %+v", got, err, h)
		}
	}
	bad := AppendHello(nil, Hello{Role: RoleUMAD})
	bad[0] ^= 1
	if _, err := DecodeHello(bad); !errors.Is(err, ErrBadMessage) {
		t.Errorf("bad magic: %v", err)
	}
}

func TestRegistrationRoundTrip(t *testing.T) {
	r := Registration{QPN: 1, MgmtClass: 3, ClassVersion: 2, RMPPVersion: 1, Flags: FlagUserRMPP, OUI: 0x1405}
	r.SetMethod(0x12)
	r.SetMethod(0x7f)
	b := AppendRegistration(nil, &r)
	if len(b) != RegistrationSize {
		t.Fatalf("%d bytes", len(b))
	}
	got, err := DecodeRegistration(b)
	if err != nil || got != r {
		t.Fatalf("got %+v, %v", got, err)
	}
	if !got.Method(0x12) || !got.Method(0x7f) || got.Method(0x13) || got.Method(200) {
		t.Errorf("method mask %#x", got.MethodMask)
	}
}

func TestUserMADRoundTrip(t *testing.T) {
	u := UserMAD{AgentID: 3, Status: 110, TimeoutMS: 1000, Retries: 3, Length: 320, QPN: 1, QKey: 0x80010000,
		LID: 0x1234, SL: 5, PathBits: 1, PKeyIndex: 2, FlowLabel: 9}
	u.GID[15] = 7
	for _, size := range []int{HeaderSize, HeaderSizeOld} {
		b := AppendUserMAD(nil, &u, size)
		if len(b) != size {
			t.Fatalf("size %d: %d bytes", size, len(b))
		}
		b = append(b, 1, 2, 3)
		got, m, err := DecodeUserMAD(b, size)
		want := u
		if size == HeaderSizeOld {
			want.PKeyIndex = 0
		}
		if err != nil || got != want || !bytes.Equal(m, []byte{1, 2, 3}) {
			t.Errorf("size %d: %+v %v %v", size, got, m, err)
		}
		// qpn, qkey and lid are big-endian on the wire.
		if b[28] != 0x12 || b[23] != 1 {
			t.Errorf("network-order fields misplaced: % x", b[20:30])
		}
	}
}

func TestSysfsListRoundTrip(t *testing.T) {
	ents := []SysfsEntry{{Dir: true, Path: "infiniband"}, {Path: "infiniband_mad/abi_version", Content: []byte("5\n")}}
	got, err := DecodeSysfsList(AppendSysfsList(nil, ents))
	if err != nil || len(got) != 2 || got[1].Path != ents[1].Path || string(got[1].Content) != "5\n" || !got[0].Dir {
		t.Fatalf("%+v %v", got, err)
	}
}

// FuzzDecode checks that no decoder panics and that what decodes
// re-encodes to the same bytes.
func FuzzDecode(f *testing.F) {
	f.Add(AppendHello(nil, Hello{Role: RoleUMAD, Port: 1}))
	f.Add(AppendRegistration(nil, &Registration{QPN: 1, MgmtClass: 3}))
	f.Add(AppendSysfsList(nil, []SysfsEntry{{Path: "a", Content: []byte("b")}}))
	f.Add(AppendUserMAD(nil, &UserMAD{AgentID: 1}, HeaderSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		if h, err := DecodeHello(b); err == nil && !bytes.Equal(AppendHello(nil, h), b) {
			t.Fatal("hello round trip")
		}
		if r, err := DecodeRegistration(b); err == nil {
			again, _ := DecodeRegistration(AppendRegistration(nil, &r))
			if again != r {
				t.Fatal("registration round trip")
			}
		}
		if ents, err := DecodeSysfsList(b); err == nil && !bytes.Equal(AppendSysfsList(nil, ents), b) {
			t.Fatal("sysfs round trip")
		}
		for _, size := range []int{HeaderSize, HeaderSizeOld} {
			if u, m, err := DecodeUserMAD(b, size); err == nil {
				again := AppendUserMAD(nil, &u, size)
				if u2, _, _ := DecodeUserMAD(append(again, m...), size); u2 != u {
					t.Fatal("user MAD round trip")
				}
			}
		}
		_, _, _ = DecodeRequest(b)
		_, _, _ = DecodeReply(b)
	})
}
