// Package mad encodes and decodes InfiniBand management datagrams: the
// common MAD header, subnet management packets (LID-routed class 0x01 and
// directed-route class 0x81), the performance management (class 0x04)
// header, and the attributes the agents, the SM and the diagnostics use,
// congestion control's (class 0x21) and ibfab's adaptive routing vendor
// class 0x0A (ar.go, ar_attrs.go) among them.
//
// Every header and attribute is a typed view over bytes with named offsets
// and one accessor pair per field, plus a Fields struct and Encode for
// building. Views do not copy: a MAD read from a frame is decoded in place.
package mad
