package attach

import (
	"testing"

	"ibfab/wire/mad"
)

// SMPs wait OpenSM's transaction time for their response; GMPs (an SA
// answering from another node's SM process) libibmad's.
func TestRequestTimeout(t *testing.T) {
	s := &Server{cfg: Config{Timeout: DefaultTimeout, GMPTimeout: DefaultGMPTimeout}}
	for _, c := range []struct {
		class mad.MgmtClass
		want  string
	}{
		{mad.ClassSubnLID, "smp"},
		{mad.ClassSubnDirected, "smp"},
		{mad.ClassSubnAdm, "gmp"},
		{mad.ClassPerfMgt, "gmp"},
	} {
		m := mad.MAD(mad.AppendMAD(nil, &mad.MADFields{BaseVersion: 1, MgmtClass: c.class, Method: mad.MethodGet}, make([]byte, mad.MADSize-24)))
		want := DefaultTimeout
		if c.want == "gmp" {
			want = DefaultGMPTimeout
		}
		if got := s.timeout(m); got != want {
			t.Errorf("class %v: timeout %v, want %v", c.class, got, want)
		}
	}
}
