package capture

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// LinkTypeERF is the pcap link type of ERF records.
const LinkTypeERF = layers.LinkType(197)

// MaxPacket is the largest IBA packet a record can hold: ERF lengths are
// 16 bits and the header takes 16 of them.
const MaxPacket = 0xffff - ERFHeaderSize

// Record is one captured packet.
type Record struct {
	Type RecordType
	Time time.Time
	Data []byte // the IBA packet, from the LRH (data) or the link packet's first byte
}

// Writer writes a pcap stream of ERF records with nanosecond timestamps.
// It is not safe for concurrent use.
type Writer struct {
	w   *pcapgo.Writer
	buf []byte
}

// NewWriter writes the pcap file header to w and returns a Writer.
func NewWriter(w io.Writer) (*Writer, error) {
	pw := pcapgo.NewWriterNanos(w)
	if err := pw.WriteFileHeader(ERFHeaderSize+MaxPacket, LinkTypeERF); err != nil {
		return nil, fmt.Errorf("capture: writing pcap header: %w", err)
	}
	return &Writer{w: pw, buf: make([]byte, 0, 4096)}, nil
}

// WritePacket appends one record of type t holding pkt, captured at ts.
func (w *Writer) WritePacket(t RecordType, ts time.Time, pkt []byte) error {
	if len(pkt) > MaxPacket {
		return fmt.Errorf("capture: packet of %d bytes exceeds the ERF limit of %d", len(pkt), MaxPacket)
	}
	size := len(pkt)
	if t == TypeInfiniBandLink && size < linkRecordSize {
		size = linkRecordSize
	}
	n := ERFHeaderSize + size
	if cap(w.buf) < n {
		w.buf = make([]byte, n)
	}
	rec := w.buf[:n]
	putERFHeader(rec, t, ts, size)
	clear(rec[ERFHeaderSize+copy(rec[ERFHeaderSize:], pkt):])
	ci := gopacket.CaptureInfo{Timestamp: ts, CaptureLength: n, Length: n}
	return w.w.WritePacket(ci, rec)
}

// Reader reads the records of a pcap stream written by Writer or ibdump.
type Reader struct {
	r *pcapgo.Reader
}

// NewReader reads the pcap file header from r; the link type must be ERF.
func NewReader(r io.Reader) (*Reader, error) {
	pr, err := pcapgo.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	if lt := pr.LinkType(); lt != LinkTypeERF {
		return nil, fmt.Errorf("capture: pcap link type %d, want ERF (%d)", lt, LinkTypeERF)
	}
	return &Reader{r: pr}, nil
}

// Next returns the next record, or io.EOF after the last one. The record's
// Data is valid until the next call; a link record's Data is the link
// packet alone, without the padding Writer adds.
func (r *Reader) Next() (Record, error) {
	data, _, err := r.r.ZeroCopyReadPacketData()
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return Record{}, fmt.Errorf("capture: truncated record: %w", err)
		}
		return Record{}, err
	}
	t, ts, payload, err := parseERF(data)
	if err != nil {
		return Record{}, err
	}
	if t == TypeInfiniBandLink && len(payload) > LinkPacketSize {
		payload = payload[:LinkPacketSize]
	}
	return Record{Type: t, Time: ts, Data: payload}, nil
}
