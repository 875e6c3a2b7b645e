package txn

import (
	"fmt"

	"ibfab/wire/mad"
)

// Request is one SMP to send: directed-route along Path (Path[0] unused)
// or LID-routed to LID. A directed-route request with a DrSLID (the SM's
// own LID) first goes LID-routed to LID, the switch where its directed
// part starts.
type Request struct {
	DR     bool
	Path   []uint8
	LID    uint16
	DrSLID uint16
	Method mad.Method
	Attr   mad.AttrID
	Mod    uint32
	Data   []byte // attribute data of a Set, at most 64 bytes
	// Tag is the caller's, for Cancel to recognize the request by.
	Tag any
	// Class, when not zero, makes the request a GMP of that class, sent
	// LID-routed to QP1: mad.ClassCongestion, with ccKey in its CC_Key
	// field and up to 192 bytes of data, or mad.ClassVendorAR (ibfab's
	// adaptive routing) with up to 232.
	Class mad.MgmtClass
	CCKey uint64
	// Probe marks a request to a device that may be gone: one attempt,
	// timed out after Config.ProbeTimeout, and its timeout is no loss
	// for the window. The caller checks another way before trying again.
	Probe bool
	// Once marks a request sent one time only, timed out after
	// Config.Timeout, its timeout no loss for the window: a standby's poll
	// of the master, whose silence is what it watches for.
	Once bool
}

// String names the request for problem reports.
func (r *Request) String() string {
	where := fmt.Sprintf("lid %d", r.LID)
	switch {
	case r.DR && r.DrSLID != 0:
		where = fmt.Sprintf("lid %d then path %s", r.LID, PathString(r.Path))
	case r.DR:
		where = "path " + PathString(r.Path)
	}
	return fmt.Sprintf("%v(%v %#x) %s", r.Method, r.Attr, r.Mod, where)
}

// Response is the outcome of a transaction: the answer's attribute data,
// or an error.
type Response struct {
	Req *Request
	// Data is the answer's attribute data: an SMP's 64 bytes (buf's), a
	// CC MAD's 192 bytes of management data, or for CongestionLog its
	// 224 bytes of log and management data, an AR MAD's 232 bytes.
	Data []byte
	Err  error
	buf  [mad.SMPDataSize]byte
}

// answers reports whether response b, whose TID is req's, is the answer
// to req: a GetResp of its attribute, in its class and routing (an SMP
// directed-route or LID-routed as req was, a GMP of req's class), and a
// directed-route one on its way back.
func answers(b []byte, req *Request) bool {
	h := mad.MAD(b)
	switch {
	case h.AttrID() != req.Attr || h.Method() != mad.MethodGetResp:
		return false
	case (h.MgmtClass() == mad.ClassSubnDirected) != req.DR:
		return false
	case req.Class == 0 && !h.MgmtClass().IsSubn():
		return false
	case req.Class != 0 && h.MgmtClass() != req.Class:
		return false
	}
	return !req.DR || mad.DRSMP(b).Direction()
}

// responseStatus is answer b's status: a directed-route SMP carries its
// own.
func responseStatus(b []byte, req *Request) mad.Status {
	if req.DR {
		return mad.DRSMP(b).Status()
	}
	return mad.MAD(b).Status()
}

// setData takes the attribute data of answer b to r's request: a GMP's
// copied as its class lays it out, an SMP's 64 bytes into r.buf.
func (r *Response) setData(b []byte) {
	switch {
	case r.Req.Class != 0:
		r.Data = gmpData(b, r.Req.Attr)
	case r.Req.DR:
		copy(r.buf[:], mad.DRSMP(b).Data())
		r.Data = r.buf[:]
	default:
		copy(r.buf[:], mad.SMP(b).Data())
		r.Data = r.buf[:]
	}
}

// pathString spells a directed route as ibnetdiscover does: "0,1,3".
func PathString(p []uint8) string {
	if len(p) == 0 {
		return "0"
	}
	s := "0"
	for _, x := range p[1:] {
		s += fmt.Sprintf(",%d", x)
	}
	return s
}

// isGMPClass reports whether the SM sends requests of class c (and so
// takes its answers): congestion control and adaptive routing.
func isGMPClass(c mad.MgmtClass) bool { return c == mad.ClassCongestion || c == mad.ClassVendorAR }

// buildGMP builds a class 0x21 request: the CC_Key in its place, the
// data in the management data area (IBA A10.4.1); or a class 0x0A one,
// the data behind the header.
func buildGMP(r *Request, tid uint64) ([]byte, error) {
	switch r.Class {
	case mad.ClassCongestion:
	case mad.ClassVendorAR:
		if len(r.Data) > mad.ARDataSize {
			return nil, fmt.Errorf("sm: AR data of %d bytes", len(r.Data))
		}
		f := mad.ARMADFields{Method: r.Method, TransactionID: tid, AttrID: r.Attr, AttrModifier: r.Mod}
		copy(f.Data[:], r.Data)
		return mad.AppendARMAD(make([]byte, 0, mad.MADSize), &f), nil
	default:
		return nil, fmt.Errorf("sm: GMP class %v", r.Class)
	}
	if len(r.Data) > mad.CCDataSize {
		return nil, fmt.Errorf("sm: CC data of %d bytes", len(r.Data))
	}
	f := mad.CCMADFields{Method: r.Method, TransactionID: tid, AttrID: r.Attr, AttrModifier: r.Mod, CCKey: r.CCKey}
	copy(f.Data[:], r.Data)
	return mad.AppendCCMAD(make([]byte, 0, mad.MADSize), &f), nil
}

// gmpData copies the attribute data of a GMP answer: for congestion
// control the log data and the management data for CongestionLog, the
// management data otherwise; for adaptive routing all behind the header.
func gmpData(b []byte, attr mad.AttrID) []byte {
	if mad.MAD(b).MgmtClass() == mad.ClassVendorAR {
		return append([]byte(nil), mad.ARMAD(b).Data()...)
	}
	if attr == mad.AttrCongestionLog {
		return append([]byte(nil), mad.CCMAD(b).LogData()...)
	}
	return append([]byte(nil), mad.CCMAD(b).Data()...)
}
