package harness

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"ibfab/capture"
	"ibfab/wire"
)

// frameRecord turns an Ethernet frame of a fabric link into a capture
// record: the IBA packet after the Ethernet header, without any padding
// (the end of a data packet is its LRH PktLen, a link packet has a fixed
// size). ok is false for frames of other EtherTypes and for ones too short
// to hold an IBA packet's first bytes. rec.Data aliases frame.
func frameRecord(frame []byte, ts time.Time) (rec capture.Record, ok bool) {
	if len(frame) < wire.EthernetSize {
		return rec, false
	}
	pkt := frame[wire.EthernetSize:]
	switch binary.BigEndian.Uint16(frame[12:14]) {
	case wire.EtherTypeData:
		if len(pkt) < wire.LRHSize {
			return rec, false
		}
		if n := int(wire.LRH(pkt).PktLen())*4 + wire.VCRCSize; n >= wire.LRHSize && n < len(pkt) {
			pkt = pkt[:n] // padding; a packet longer than its frame is kept whole, for tshark to flag
		}
		rec.Type = capture.TypeInfiniBand
	case wire.EtherTypeLink:
		if len(pkt) < wire.FlowControlSize {
			return rec, false
		}
		pkt = pkt[:wire.FlowControlSize]
		rec.Type = capture.TypeInfiniBandLink
	default:
		return rec, false
	}
	if len(pkt) > capture.MaxPacket {
		return rec, false
	}
	rec.Time, rec.Data = ts, pkt
	return rec, true
}

// ConvertStats counts what ConvertEthernet did.
type ConvertStats struct {
	Frames  int // IBA frames written
	Skipped int // frames of other EtherTypes, or too short
}

// packetSource is a pcap or pcapng reader.
type packetSource interface {
	ReadPacketData() ([]byte, gopacket.CaptureInfo, error)
	LinkType() layers.LinkType
}

// openEthernet reads the header of a pcap or pcapng stream of Ethernet
// frames.
func openEthernet(r io.Reader) (packetSource, error) {
	br := bufio.NewReader(r)
	magic, err := br.Peek(4)
	if err != nil {
		return nil, fmt.Errorf("not a capture file: %w", err)
	}
	var src packetSource
	if binary.LittleEndian.Uint32(magic) == pcapngMagic {
		src, err = pcapgo.NewNgReader(br, pcapgo.NgReaderOptions{ErrorOnMismatchingLinkType: true})
	} else {
		src, err = pcapgo.NewReader(br)
	}
	if err != nil {
		return nil, err
	}
	switch lt := src.LinkType(); lt {
	case layers.LinkTypeEthernet:
		return src, nil
	case capture.LinkTypeERF:
		return nil, errors.New("the capture is ERF already (ibfab capture's format): nothing to convert")
	default:
		return nil, fmt.Errorf("link type %v, want Ethernet: capture on a node's pN interface (not 'any')", lt)
	}
}

// pcapngMagic is the block type of a pcapng section header, the first four
// bytes of the file.
const pcapngMagic = 0x0a0d0d0a

// ConvertEthernet reads the pcap or pcapng Ethernet captures rs (tcpdump -i
// pN) and writes the IBA frames in them to w as ERF records, merged in
// timestamp order (each input in its own order).
func ConvertEthernet(w *capture.Writer, rs ...io.Reader) (ConvertStats, error) {
	var st ConvertStats
	type input struct {
		src  packetSource
		next capture.Record
		ok   bool // next holds a record
	}
	in := make([]*input, len(rs))
	advance := func(i int) error {
		for {
			data, ci, err := in[i].src.ReadPacketData()
			if errors.Is(err, io.EOF) {
				in[i].ok = false
				return nil
			}
			if err != nil {
				return fmt.Errorf("input %d: %w", i+1, err)
			}
			rec, ok := frameRecord(data, ci.Timestamp)
			if !ok {
				st.Skipped++
				continue
			}
			in[i].next, in[i].ok = rec, true
			return nil
		}
	}
	for i, r := range rs {
		src, err := openEthernet(r)
		if err != nil {
			return st, fmt.Errorf("input %d: %w", i+1, err)
		}
		in[i] = &input{src: src}
		if err := advance(i); err != nil {
			return st, err
		}
	}
	for {
		first := -1
		for i, x := range in {
			if x.ok && (first < 0 || x.next.Time.Before(in[first].next.Time)) {
				first = i
			}
		}
		if first < 0 {
			return st, nil
		}
		r := in[first].next
		if err := w.WritePacket(r.Type, r.Time, r.Data); err != nil {
			return st, err
		}
		st.Frames++
		if err := advance(first); err != nil {
			return st, err
		}
	}
}
