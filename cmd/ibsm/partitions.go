package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"ibfab/sm"
	"ibfab/sm/partition"
)

// partOptions are the partition flags of the SM.
type partOptions struct {
	file    string
	enforce partition.Enforce
}

func addPartitionFlags(fs *flag.FlagSet, p *partOptions) {
	fs.StringVar(&p.file, "partitions", "", "manage partitions from `file`, a partitions.conf in OpenSM's syntax (its -P): P_Key tables on the end ports, and on the switch ports facing CAs with --part-enforce; an empty file is OpenSM's run without one (every port a full member of 0x7fff)")
	fs.TextVar(&p.enforce, "part-enforce", partition.EnforceBoth, "partition enforcement of the switch ports facing CAs: in, out, both or off (OpenSM's part_enforce); given alone, it manages partitions as OpenSM does without a file")
}

// config reads the file into the SM's partition configuration; nil when
// neither flag was given. The file's warnings go to stderr.
func (p *partOptions) config(fs *flag.FlagSet, stderr io.Writer) (*sm.PartitionConfig, error) {
	if p.file == "" && !flagSet(fs, "part-enforce") {
		return nil, nil
	}
	c := &sm.PartitionConfig{Enforce: p.enforce}
	if p.file != "" {
		f, err := partition.Load(p.file)
		if err != nil {
			return nil, err
		}
		for _, w := range f.Warnings {
			fmt.Fprintf(stderr, "ibsm: warning: %s\n", w)
		}
		c.File = f
	}
	return c, nil
}

// reportPartition prints one port whose table or enforcement changed.
func reportPartition(w io.Writer, e sm.PartitionEvent, asJSON bool) {
	if asJSON {
		printJSONLine(w, e)
		return
	}
	fmt.Fprintf(w, "partition %s %s (%s)", e.Type, e.Port, e.GUID)
	if len(e.Blocks) > 0 {
		fmt.Fprintf(w, ": blocks %v set, table %s", e.Blocks, strings.Join(e.Table, " "))
	}
	if e.Enforce != nil {
		fmt.Fprintf(w, ": enforcement %s", *e.Enforce)
	}
	fmt.Fprintln(w)
}

// reportPartitionResult prints a sweep's partition line.
func reportPartitionResult(w io.Writer, r *sm.PartitionResult) {
	fmt.Fprintf(w, "  partitions: %d in effect on %d ports and %d switch ports, %d blocks read, %d set, %d enforcement Sets, %d failures\n",
		r.Partitions, r.Ports, r.SwitchPorts, r.BlocksRead, r.BlocksSet, r.Enforcement, r.Failures)
}
