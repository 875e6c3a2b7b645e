package mad_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

func TestNoticeRoundTrip(t *testing.T) {
	var full mad.NoticeFields
	full.IsGeneric, full.Type, full.ProducerType, full.TrapNumber = true, 0x7f, 0xffffff, 0xffff
	full.IssuerLID, full.NoticeToggle, full.NoticeCount = 0xffff, true, 0x7fff
	copy(full.DataDetails[:], smpPattern(1, mad.NoticeDetailsSize))
	vendor := mad.NoticeFields{Type: mad.NoticeInfo, ProducerType: 0x0002c9, TrapNumber: 0x1003, IssuerLID: 9}
	tests := []struct {
		name string
		f    mad.NoticeFields
	}{
		{"zero", mad.NoticeFields{}},
		{"trap 128", mad.Trap128(12)},
		{"trap 129", mad.PortTrap(mad.TrapLinkIntegrity, mad.NodeTypeCA, 7, 1)},
		{"vendor", vendor},
		{"all ones", full},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mad.AppendNotice(nil, &tt.f)
			require.Len(t, b, mad.NoticeSize)
			got, err := mad.DecodeNotice(b)
			require.NoError(t, err)
			if got != tt.f {
				t.Errorf("DecodeNotice(%x) = %+v, want %+v", b, got, tt.f)
			}
		})
	}
}

func TestNoticeIssuerGID(t *testing.T) {
	f := mad.Trap128(3)
	copy(f.IssuerGID[:], smpPattern(0xf0, 16))
	b := make(mad.Notice, mad.NoticeWithGIDSize)
	b.Encode(&f)
	require.True(t, b.HasIssuerGID())
	assert.Equal(t, smpPattern(0xf0, 16), []byte(b[64:80]))
	assert.Equal(t, f, b.Fields())

	short := mad.Notice(make([]byte, mad.NoticeSize))
	short.Encode(&f)
	assert.False(t, short.HasIssuerGID())
	want := f
	want.IssuerGID = [16]byte{}
	assert.Equal(t, want, short.Fields(), "no IssuerGID in SMP data")
}

// TestNoticeLayout checks IBA 13.4.8.2 and the trap data details of
// 14.2.5.1 one field at a time.
func TestNoticeLayout(t *testing.T) {
	tests := []struct {
		name string
		set  func(mad.Notice)
		off  int
		want []byte
	}{
		{"IsGeneric", func(n mad.Notice) { n.SetIsGeneric(true) }, 0, []byte{0x80}},
		{"Type", func(n mad.Notice) { n.SetType(0xff) }, 0, []byte{0x7f}},
		{"ProducerType", func(n mad.Notice) { n.SetProducerType(0xff010203) }, 1, []byte{1, 2, 3}},
		{"TrapNumber", func(n mad.Notice) { n.SetTrapNumber(128) }, 4, []byte{0, 0x80}},
		{"IssuerLID", func(n mad.Notice) { n.SetIssuerLID(0x0506) }, 6, []byte{5, 6}},
		{"NoticeToggle", func(n mad.Notice) { n.SetNoticeToggle(true) }, 8, []byte{0x80, 0}},
		{"NoticeCount", func(n mad.Notice) { n.SetNoticeCount(0xffff) }, 8, []byte{0x7f, 0xff}},
		{"DataDetails", func(n mad.Notice) { copy(n.DataDetails(), smpPattern(1, 54)) }, 10, smpPattern(1, 54)},
		{"Trap128LID", func(n mad.Notice) { n.SetTrap128LID(0x0a0b) }, 10, []byte{0x0a, 0x0b}},
		{"PortTrapLID", func(n mad.Notice) { n.SetPortTrapLID(0x0c0d) }, 12, []byte{0x0c, 0x0d}},
		{"PortTrapPort", func(n mad.Notice) { n.SetPortTrapPort(7) }, 14, []byte{7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := make(mad.Notice, mad.NoticeSize)
			tt.set(b)
			want := make([]byte, mad.NoticeSize)
			copy(want[tt.off:], tt.want)
			if !bytes.Equal(b, want) {
				t.Errorf("after Set%s: %x, want %x at %d and zeros elsewhere", tt.name, []byte(b), tt.want, tt.off)
			}
		})
	}
}

func TestTrapBuilders(t *testing.T) {
	n := mad.Notice(mad.AppendNotice(nil, noticePtr(mad.Trap128(0x21))))
	assert.True(t, n.IsGeneric())
	assert.Equal(t, mad.NoticeUrgent, n.Type())
	assert.Equal(t, mad.ProducerSwitch, n.ProducerType())
	assert.Equal(t, uint16(128), n.TrapNumber())
	assert.Equal(t, uint16(0x21), n.IssuerLID())
	assert.Equal(t, uint16(0x21), n.Trap128LID())

	p := mad.Notice(mad.AppendNotice(nil, noticePtr(mad.PortTrap(mad.TrapBufferOverrun, mad.NodeTypeSwitch, 4, 17))))
	assert.Equal(t, uint16(130), p.TrapNumber())
	assert.Equal(t, uint32(2), p.ProducerType())
	assert.Equal(t, uint16(4), p.PortTrapLID())
	assert.Equal(t, uint8(17), p.PortTrapPort())
	assert.Equal(t, []byte{0, 0}, p.DataDetails()[:2], "reserved before LIDADDR")

	_, err := mad.DecodeNotice(make([]byte, mad.NoticeSize-1))
	assert.ErrorIs(t, err, mad.ErrTruncated)
}

// TestTrap144 checks the trap 144 an SM announcing its priority sends,
// against the layout of IBA 14.2.5.1 as OpenSM fills it: LIDADDR at
// bytes 2-3 of the details, the "other local changes" bit at byte 5,
// the CapabilityMask at 6-9, the change flags at 10-11.
func TestTrap144(t *testing.T) {
	tests := []struct {
		name    string
		flags   uint16
		local   bool
		details []byte
	}{
		{"capability mask only", 0, false, []byte{0, 0, 0x12, 0x34, 0, 0, 0x00, 0x01, 0x02, 0x0a, 0, 0, 0, 0}},
		{"SM priority", mad.Trap144SMPriority, true, []byte{0, 0, 0x12, 0x34, 0, 1, 0x00, 0x01, 0x02, 0x0a, 0, 8, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := mad.Notice(mad.AppendNotice(nil, noticePtr(mad.Trap144(mad.NodeTypeCA, 0x1234, 0x0001020a, tt.flags))))
			assert.True(t, n.IsGeneric())
			assert.Equal(t, mad.NoticeInfo, n.Type())
			assert.Equal(t, mad.ProducerCA, n.ProducerType())
			assert.Equal(t, mad.TrapCapabilityMaskChange, n.TrapNumber())
			assert.EqualValues(t, 0x1234, n.IssuerLID())
			assert.Equal(t, tt.details, n.DataDetails()[:len(tt.details)])
			assert.EqualValues(t, 0x1234, n.Trap144LID())
			assert.Equal(t, tt.local, n.Trap144OtherLocalChanges())
			assert.EqualValues(t, 0x0001020a, n.Trap144CapabilityMask())
			assert.Equal(t, tt.flags, n.Trap144ChangeFlags())
			assert.Zero(t, n.Trap144CapabilityMask2())
		})
	}
}

func noticePtr[T any](v T) *T { return &v }
