package agent_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/wire/mad"
)

// gmpOf builds a GMP of class c with method m and TID 0x4242.
func gmpOf(c mad.MgmtClass, m mad.Method) []byte {
	return mad.AppendMAD(nil, &mad.MADFields{BaseVersion: mad.BaseVersion, MgmtClass: c, ClassVersion: 2,
		Method: m, TransactionID: 0x4242, AttrID: 0x11}, nil)
}

// TestGMPToClient: with Config.LocalGMP every GMP response, whatever its
// class, and every request of a class the agent does not serve goes to the
// node's MAD client, addressed as it arrived; the PMA still answers its own
// requests, and the P_Key and DLID checks still come first. Without it a
// CA that is not the SM's answers or drops them, as before.
func TestGMPToClient(t *testing.T) {
	const (
		local    = "local"
		answered = "answered"
		dropped  = "dropped"
	)
	tests := []struct {
		name     string
		localGMP bool
		sm       bool
		in       agent.Inbound
		want     string
		count    func(agent.Stats) uint64
	}{
		{"SA GetResp", true, false, gmp(gmpOf(mad.ClassSubnAdm, mad.MethodGetResp)), local, localCount},
		{"SA GetTableResp", true, false, gmp(gmpOf(mad.ClassSubnAdm, mad.MethodGetTable|mad.MethodResponse)), local, localCount},
		{"SA Report to a subscriber", true, false, gmp(gmpOf(mad.ClassSubnAdm, mad.MethodReport)), local, localCount},
		{"CM Get", true, false, gmp(gmpOf(mad.ClassCM, mad.MethodGet)), local, localCount},
		{"vendor class GetResp", true, false, gmp(gmpOf(0x0a, mad.MethodGetResp)), local, localCount},
		{"PMA GetResp", true, false, gmp(pma(mad.MethodGetResp, mad.AttrPortCounters, nil)), local, localCount},
		{"PMA Get is served", true, false, gmp(pma(mad.MethodGet, mad.AttrPortCounters, nil)), answered, responses},
		{"SA GetResp, wrong P_Key", true, false, withPKey(gmp(gmpOf(mad.ClassSubnAdm, mad.MethodGetResp)), 0x8001), dropped, pkeyViol},
		{"SA GetResp, other LID", true, false, withDLID(gmp(gmpOf(mad.ClassSubnAdm, mad.MethodGetResp)), 99), dropped, misaddr},
		{"no client: SA GetResp", false, false, gmp(gmpOf(mad.ClassSubnAdm, mad.MethodGetResp)), dropped, unexpected},
		{"no client: CM Get", false, false, gmp(gmpOf(mad.ClassCM, mad.MethodGet)), answered, badVer},
		{"no client, SM attached: SA Get", false, true, gmp(gmpOf(mad.ClassSubnAdm, mad.MethodGet)), local, localCount},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nd := newNode(t, mad.NodeTypeCA, 2, func(c *agent.Config) { c.LocalGMP = tt.localGMP })
			if tt.sm {
				require.NoError(t, nd.a.SetIsSM(1, true))
			}
			before := tt.count(nd.a.Stats())
			outs := nd.a.HandleMAD(tt.in)
			assert.Equal(t, before+1, tt.count(nd.a.Stats()), "counter")
			switch tt.want {
			case dropped:
				assert.Empty(t, outs)
				return
			case answered:
				o := one(t, outs)
				assert.False(t, o.Local)
				assert.Equal(t, mad.MethodGetResp, mad.MAD(o.MAD).Method())
				assert.Equal(t, tt.in.SLID, o.DLID)
				return
			}
			o := one(t, outs)
			assert.True(t, o.Local, "for the MAD client")
			assert.Equal(t, tt.in.MAD, o.MAD, "handed on unchanged")
			assert.Equal(t, tt.in.Port, o.Port)
			assert.Equal(t, tt.in.SLID, o.SLID)
			assert.Equal(t, tt.in.SrcQP, o.SrcQP)
			assert.Equal(t, tt.in.DstQP, o.DestQP)
		})
	}
}

func localCount(s agent.Stats) uint64 { return s.Local }
func responses(s agent.Stats) uint64  { return s.Responses }
func pkeyViol(s agent.Stats) uint64   { return s.PKeyViolations }
func misaddr(s agent.Stats) uint64    { return s.Misaddressed }
func unexpected(s agent.Stats) uint64 { return s.Unexpected }

func withPKey(in agent.Inbound, p mad.PKey) agent.Inbound { in.PKey = p; return in }
func withDLID(in agent.Inbound, l uint16) agent.Inbound   { in.DLID = l; return in }

// TestGMPVersionAndMethod: the classes the agent serves itself (PMA, CC,
// AR) answer a request of another base or class version BadVersion, and
// one that is neither Get nor Set MethodUnsupported, before looking at
// the attribute.
func TestGMPVersionAndMethod(t *testing.T) {
	classes := []struct {
		name string
		get  func(m mad.Method) []byte // a request of an attribute the switch has
	}{
		{"PMA", func(m mad.Method) []byte { return pma(m, mad.AttrPortCounters, nil) }},
		{"CC", func(m mad.Method) []byte { return ccMAD(m, mad.AttrCongestionInfo, 0, 0, nil) }},
		{"AR", func(m mad.Method) []byte { return arMAD(m, mad.AttrARInfo, 0, nil) }},
	}
	tests := []struct {
		name   string
		method mad.Method
		change func(b []byte)
		want   mad.Status
	}{
		{"Get", mad.MethodGet, nil, mad.StatusOK},
		{"GetTable", mad.MethodGetTable, nil, mad.StatusMethodUnsupported},
		{"Send", mad.MethodSend, nil, mad.StatusMethodUnsupported},
		{"base version 2", mad.MethodGet, func(b []byte) { b[0] = 2 }, mad.StatusBadVersion},
		{"next class version", mad.MethodGet, func(b []byte) { b[2]++ }, mad.StatusBadVersion},
		{"base version 2, GetTable", mad.MethodGetTable, func(b []byte) { b[0] = 2 }, mad.StatusBadVersion},
	}
	for _, c := range classes {
		for _, tt := range tests {
			t.Run(c.name+" "+tt.name, func(t *testing.T) {
				nd := newNode(t, mad.NodeTypeSwitch, 4)
				b := c.get(tt.method)
				if tt.change != nil {
					tt.change(b)
				}
				o := one(t, nd.a.HandleMAD(gmp(b)))
				assert.Equal(t, tt.want, mad.MAD(o.MAD).Status())
				assert.Equal(t, mad.MethodGetResp, mad.MAD(o.MAD).Method())
			})
		}
	}
}
