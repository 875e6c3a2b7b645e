package harness

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"ibfab/capture"
	"ibfab/wire"
)

const (
	captureSynopsis = "capture N NODE[PORT] [-w FILE] [--duration D | --count K] | capture --convert IN... -w FILE"
	captureDesc     = `
Captures the frames crossing port PORT (default 1) of NODE of fabric N, in
both directions, and writes them to FILE as an ERF pcap (ERF type 21 data
packets, 25 link packets), the format of Mellanox ibdump, which tshark and
Wireshark decode with no options:
  ibfab capture default 'ca4[1]' -w ca4.pcap --duration 10s
  tshark -r ca4.pcap
It stops on Ctrl-C (SIGINT or SIGTERM), after --duration or after --count
frames, and prints how many frames it wrote. -w - writes to standard output.
Without -w the file is N-NODE-pPORT.pcap. Timestamps are the kernel's
receive times at the two ends of the link.

With --convert it reads plain Ethernet captures instead (pcap or pcapng, as
tcpdump -i pN or tshark -i pN write them in a node's namespace) and writes
the IBA frames in them in the same ERF format, merged in timestamp order;
frames of other EtherTypes are skipped and counted.`
)

// portArg matches "NODE" or "NODE[PORT]".
var portArg = regexp.MustCompile(`^([^\[\]]+)(?:\[([0-9]+)\])?$`)

func runCapture(env *Env, args []string) (err error) {
	const cmd = "capture"
	fs := flagSet(cmd)
	out := fs.String("w", "", "write the capture to `FILE` (- for standard output)")
	dur := fs.Duration("duration", 0, "stop after `D` (0: no limit)")
	count := fs.Int("count", 0, "stop after `K` frames (0: no limit)")
	convert := fs.Bool("convert", false, "convert Ethernet captures (tcpdump -i pN) given as arguments")
	pos, help, err := ParseInterleaved(env, fs, cmd, captureSynopsis, captureDesc, args)
	if help || err != nil {
		return err
	}
	usage := func(e error) error { return &UsageError{Cmd: cmd, Usage: captureSynopsis, Err: e} }
	switch {
	case *dur < 0:
		return usage(fmt.Errorf("--duration %v: want a positive duration", *dur))
	case *count < 0:
		return usage(fmt.Errorf("--count %d: want a positive count", *count))
	case *dur > 0 && *count > 0:
		return usage(errors.New("--duration and --count exclude each other"))
	}
	defer func() {
		var ue *UsageError
		if err != nil && !errors.As(err, &ue) {
			err = &CommandError{Cmd: cmd, Err: err}
		}
	}()
	if *convert {
		switch {
		case len(pos) == 0:
			return usage(errors.New("--convert: missing input capture"))
		case *out == "":
			return usage(errors.New("--convert: missing -w FILE"))
		case *dur > 0 || *count > 0:
			return usage(errors.New("--convert takes no --duration or --count"))
		}
		return convertFiles(env, pos, *out)
	}
	if len(pos) != 2 {
		return usage(errors.New("want a fabric name and NODE[PORT]"))
	}
	name := pos[0]
	m := portArg.FindStringSubmatch(pos[1])
	if m == nil {
		return usage(fmt.Errorf("%q: want NODE or NODE[PORT]", pos[1]))
	}
	node, port := m[1], 1
	if m[2] != "" {
		if port, err = strconv.Atoi(m[2]); err != nil || port < 1 || port > 254 {
			return usage(fmt.Errorf("%q: port %s out of 1..254", pos[1], m[2]))
		}
	}
	if *out == "" {
		*out = fmt.Sprintf("%s-%s-p%d.pcap", name, node, port)
	}

	c, err := OpenCapture(name, node, port)
	if err != nil {
		return err
	}
	defer c.Close()
	w, done, msgs, err := createCapture(env, *out)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *dur > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *dur)
		defer cancel()
	}
	fmt.Fprintf(env.Stderr, "capturing %s <-> %s of fabric %s to %s; Ctrl-C stops\n", c.Port, c.Peer, name, *out)
	n, err := c.Run(ctx, w, *count)
	if cerr := done(); err == nil {
		err = cerr
	}
	st := c.Stats()
	fmt.Fprintf(msgs, "wrote %d frames to %s", n, *out)
	if st.KernelDrops > 0 {
		fmt.Fprintf(msgs, "; the kernel dropped %d", st.KernelDrops)
	}
	fmt.Fprintln(msgs)
	return err
}

// createCapture opens path ("-": env.Stdout) for a capture and returns its
// writer, a function that flushes and closes it, and where to print
// messages (stderr when the capture goes to stdout).
func createCapture(env *Env, path string) (*capture.Writer, func() error, io.Writer, error) {
	var (
		dst     io.Writer
		closeFn = func() error { return nil }
		msgs    = env.Stdout
	)
	if path == "-" {
		dst, msgs = env.Stdout, env.Stderr
	} else {
		f, err := os.Create(path)
		if err != nil {
			return nil, nil, nil, err
		}
		dst, closeFn = f, f.Close
	}
	bw := bufio.NewWriterSize(dst, 64<<10)
	w, err := capture.NewWriter(bw)
	if err != nil {
		closeFn()
		return nil, nil, nil, err
	}
	done := func() error {
		return errors.Join(bw.Flush(), closeFn())
	}
	return w, done, msgs, nil
}

// ParseInterleaved parses flags that may come before, between and after
// the positional arguments (ibfab capture N NODE -w F), and returns the
// positional ones. -h prints help.
func ParseInterleaved(env *Env, fs *flag.FlagSet, cmd, synopsis, desc string, args []string) (pos []string, help bool, err error) {
	if help, err := ParseFlags(env, fs, cmd, synopsis, desc, args, -1); help || err != nil {
		return nil, help, err
	}
	rest := fs.Args()
	for len(rest) > 0 {
		if rest[0] == "--" {
			return append(pos, rest[1:]...), false, nil
		}
		pos = append(pos, rest[0])
		if err := fs.Parse(rest[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return ParseInterleaved(env, fs, cmd, synopsis, desc, []string{"-h"})
			}
			return nil, false, &UsageError{Cmd: cmd, Usage: synopsis, Err: err}
		}
		rest = fs.Args()
	}
	return pos, false, nil
}

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

// convertFiles is capture --convert.
func convertFiles(env *Env, inputs []string, out string) error {
	var rs []io.Reader
	for _, p := range inputs {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		rs = append(rs, f)
	}
	w, done, msgs, err := createCapture(env, out)
	if err != nil {
		return err
	}
	st, err := ConvertEthernet(w, rs...)
	if derr := done(); err == nil {
		err = derr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(msgs, "wrote %d frames to %s (%d other frames skipped)\n", st.Frames, out, st.Skipped)
	return nil
}
