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
