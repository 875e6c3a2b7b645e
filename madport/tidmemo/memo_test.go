package tidmemo_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"ibfab/madport/tidmemo"
)

func TestMemo(t *testing.T) {
	for _, c := range []struct {
		name    string
		lowBits uint
		sent    uint64 // as the caller sent it
		back    uint64 // as the stack returns it
	}{
		{"ibsim slot", 48, 0xabcd_0000_1234_5678, 0x0003_0000_1234_5678},
		{"umad hi_tid", 32, 0xdead_beef_0000_0042, 0x0000_0007_0000_0042},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := tidmemo.New(c.lowBits, 4)
			m.Remember(c.sent)
			got, ok := m.Restore(c.back, false)
			assert.True(t, ok)
			assert.Equal(t, c.sent, got)
			got, ok = m.Restore(c.back, true) // the response: forget it
			assert.True(t, ok)
			assert.Equal(t, c.sent, got)
			got, ok = m.Restore(c.back, true)
			assert.False(t, ok, "restored after it was forgotten")
			assert.Equal(t, c.back, got, "an unknown TID comes back unchanged")
		})
	}
}

// The oldest record goes when the memo is full; a TID sent again keeps
// its newer record when the older one's slot is reused.
func TestMemoEviction(t *testing.T) {
	m := tidmemo.New(32, 3)
	m.Remember(1<<32 | 1)
	m.Remember(2<<32 | 2)
	m.Remember(3<<32 | 1) // TID 1 again, new upper bits
	m.Remember(4<<32 | 4) // reuses the first slot (TID 1's old record)
	got, ok := m.Restore(1, false)
	assert.True(t, ok)
	assert.Equal(t, uint64(3<<32|1), got)
	m.Remember(5<<32 | 5) // evicts TID 2
	_, ok = m.Restore(2, false)
	assert.False(t, ok)
	got, ok = m.Restore(4, false)
	assert.True(t, ok)
	assert.Equal(t, uint64(4<<32|4), got)
}
