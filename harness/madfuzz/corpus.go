package madfuzz

import (
	"errors"
	"fmt"
	"io"

	"ibfab/capture"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// ReadCorpus takes the MADs of a capture (ibfab pcap sample, ibfab
// capture, ibdump): every data packet on QP0 or QP1 that parses as UD and
// carries a whole MAD. Real MADs make mutations that get past the first
// checks an agent makes, where generated ones often do not.
func ReadCorpus(r io.Reader) ([][]byte, error) {
	cr, err := capture.NewReader(r)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for {
		rec, err := cr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, err
		}
		if rec.Type != capture.TypeInfiniBand {
			continue
		}
		u, err := wire.ParseUD(rec.Data)
		if err != nil || u.DestQP > 1 || len(u.Payload) < mad.MADSize || mad.MAD(u.Payload).BaseVersion() != mad.BaseVersion {
			continue
		}
		out = append(out, append([]byte(nil), u.Payload[:mad.MADSize]...))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("madfuzz: the capture holds no MAD")
	}
	return out, nil
}
