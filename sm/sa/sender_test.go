package sa_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/madport"
	"ibfab/rmpp"
	"ibfab/sm/sa"
	"ibfab/wire/mad"
)

// loopPort is a madport.Port that hands every MAD sent to a function.
type loopPort struct {
	madport.Port
	mu   sync.Mutex
	sent func(m madport.MAD)
}

func (p *loopPort) Send(m madport.MAD) error {
	p.mu.Lock()
	f := p.sent
	p.mu.Unlock()
	f(m)
	return nil
}

// TestPortSenderRMPP sends a GetTable answer of many segments through an
// RMPP receiver, its ACKs taken back by the SA, and checks the table
// arrives whole.
func TestPortSenderRMPP(t *testing.T) {
	e := newEnv(t)
	port := &loopPort{}
	ps := &sa.PortSender{Port: port}
	a, err := sa.New(sa.Config{Sender: ps})
	require.NoError(t, err)
	a.Update(e.sm.View())

	acks := make(chan []byte, 256)
	recv, err := rmpp.NewReceiver(rmpp.ReceiverConfig{Send: func(m []byte) error { acks <- m; return nil }})
	require.NoError(t, err)
	whole := make(chan []byte, 1)
	var segs int
	port.sent = func(m madport.MAD) {
		segs++
		msg, done, err := recv.Handle(m.Data)
		assert.NoError(t, err)
		if done {
			whole <- msg
		}
	}
	f := mad.SAMADFields{MAD: mad.MADFields{BaseVersion: 1, MgmtClass: mad.ClassSubnAdm, ClassVersion: sa.ClassVersion,
		Method: mad.MethodGetTable, TransactionID: 0x99, AttrID: mad.AttrSAPathRecord}}
	a.HandleMAD(madport.MAD{LID: e.lid(1), QP: 1, Data: mad.AppendSAMAD(nil, &f)})
	ctx, cancel := context.WithTimeout(context.Background(), 10e9)
	defer cancel()
	for {
		select {
		case ack := <-acks:
			a.HandleMAD(madport.MAD{LID: e.lid(1), QP: 1, Data: ack})
			continue
		case msg := <-whole:
			assert.Equal(t, 64*64, len(msg)-56, "64 PathRecords of 64 bytes")
			b := mad.SAMAD(msg[:mad.MADSize])
			assert.Equal(t, uint16(8), b.AttributeOffset())
			assert.Equal(t, mad.MethodGetTableResp, b.MAD().Method())
			pr, err := mad.DecodePathRecord(msg[56:])
			require.NoError(t, err)
			assert.NotZero(t, pr.DLID)
			assert.Equal(t, (64*64+199)/200, segs)
			st := ps.Stats()
			assert.Equal(t, uint64(1), st.Transfers)
			return
		case <-ctx.Done():
			t.Fatal("the transfer did not complete")
		}
	}
}

// TestRequestAck: a request sent as a one-segment RMPP transfer (a
// MultiPathRecord GetMulti, as osmtest sends it) gets the SA's ACK of
// segment 1 before the answer.
func TestRequestAck(t *testing.T) {
	e := newEnv(t)
	var sent []madport.MAD
	port := &loopPort{sent: func(m madport.MAD) { sent = append(sent, m) }}
	a, err := sa.New(sa.Config{Sender: &sa.PortSender{Port: port}})
	require.NoError(t, err)
	a.Update(e.sm.View())
	l := mad.SAMultiPathRecordLayout
	q := mad.MultiPathRecordFields{SGIDCount: 1, DGIDCount: 1, GIDs: []mad.GID{e.gid(0), e.gid(2)}}
	f := mad.SAMADFields{MAD: mad.MADFields{BaseVersion: 1, MgmtClass: mad.ClassSubnAdm, ClassVersion: sa.ClassVersion,
		Method: mad.MethodGetMulti, TransactionID: 0x77, AttrID: mad.AttrSAMultiPathRecord},
		ComponentMask: l.Bit("SGIDCount") | l.Bit("DGIDCount"), RMPPVersion: mad.RMPPVersion1,
		RMPPType: uint8(mad.RMPPTypeData), RMPPFlags: uint8(mad.RMPPFlagActive | mad.RMPPFlagFirst | mad.RMPPFlagLast),
		SegmentNumber: 1, PayloadLength: uint32(mad.SAHeaderSize + l.Size)}
	copy(f.Data[:], mad.AppendMultiPathRecord(nil, &q))
	a.HandleMAD(madport.MAD{LID: e.lid(0), QP: 1, Data: mad.AppendSAMAD(nil, &f)})
	require.GreaterOrEqual(t, len(sent), 2, "an ACK and the answer")
	ack := mad.RMPP(sent[0].Data).Fields()
	assert.Equal(t, mad.RMPPTypeAck, ack.Type)
	assert.Equal(t, uint32(1), ack.Data1, "segment 1 acknowledged")
	assert.Equal(t, uint64(0x77), mad.MAD(sent[0].Data).TransactionID())
	assert.Equal(t, e.lid(0), sent[0].LID)
	assert.Equal(t, mad.MethodGetMultiResp, mad.MAD(sent[1].Data).Method())
	assert.Equal(t, mad.StatusOK, mad.MAD(sent[1].Data).Status())
}

// segmentingPort is a loopPort whose transport runs RMPP for the SA's
// class, as the kernel's umad does for an RMPP agent.
type segmentingPort struct{ loopPort }

func (*segmentingPort) SegmentsRMPP(class uint8) bool { return class == uint8(mad.ClassSubnAdm) }

// TestPortSenderWhole: on a port that runs RMPP itself, a GetTableResp
// goes as one message of the SA header and the records alone, however
// short (a padded one would count its padding as records), with only
// the Active flag for the transport to complete.
func TestPortSenderWhole(t *testing.T) {
	port := &segmentingPort{}
	var got []madport.MAD
	port.sent = func(m madport.MAD) { got = append(got, m) }
	ps := &sa.PortSender{Port: port}
	for _, records := range []int{1, 40} {
		got = nil
		r := sa.Response{To: madport.MAD{LID: 5, QP: 1}, Payload: make([]byte, 64*records)}
		r.Header.MAD = mad.MADFields{BaseVersion: 1, MgmtClass: mad.ClassSubnAdm, ClassVersion: sa.ClassVersion,
			Method: mad.MethodGetTableResp, TransactionID: 7, AttrID: mad.AttrSAPathRecord}
		require.NoError(t, ps.SendSA(r))
		require.Len(t, got, 1, "%d records: one message", records)
		m := got[0].Data
		assert.Len(t, m, mad.RMPPClassHeaderSize(mad.ClassSubnAdm)+64*records, "%d records", records)
		assert.Equal(t, mad.RMPPFlagActive, mad.RMPP(m).Flags(), "Active alone")
		assert.Equal(t, uint8(mad.RMPPVersion1), mad.RMPP(m).Version())
	}
}

// TestRequestSegmentZero: a request whose RMPP DATA segment is numbered 0
// without the First flag (what ibfab fuzz sends) is aborted with
// BadSegment and not answered; before rmpp's fix the receiver the SA made
// for it ACKed a transfer it did not have and panicked.
func TestRequestSegmentZero(t *testing.T) {
	var sent []madport.MAD
	port := &loopPort{sent: func(m madport.MAD) { sent = append(sent, m) }}
	a, err := sa.New(sa.Config{Sender: &sa.PortSender{Port: port}})
	require.NoError(t, err)
	f := mad.SAMADFields{MAD: mad.MADFields{BaseVersion: 1, MgmtClass: mad.ClassSubnAdm, ClassVersion: sa.ClassVersion,
		Method: mad.MethodGet, TransactionID: 0x78, AttrID: mad.AttrSANodeRecord},
		RMPPVersion: mad.RMPPVersion1, RMPPType: uint8(mad.RMPPTypeData), RMPPFlags: uint8(mad.RMPPFlagActive)}
	a.HandleMAD(madport.MAD{LID: 5, QP: 1, Data: mad.AppendSAMAD(nil, &f)})
	require.Len(t, sent, 1, "the ABORT alone")
	r := mad.RMPP(sent[0].Data).Fields()
	assert.Equal(t, mad.RMPPTypeAbort, r.Type)
	assert.Equal(t, mad.RMPPStatusBadSegment, r.Status)
}
