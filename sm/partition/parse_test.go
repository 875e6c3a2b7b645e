package partition_test

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm/partition"
	"ibfab/wire/mad"
)

func parse(t *testing.T, text string) *partition.Config {
	t.Helper()
	c, err := partition.Parse(strings.NewReader(text), "p.conf")
	require.NoError(t, err)
	return c
}

func guidMember(line int, g uint64, m partition.Membership) partition.Member {
	return partition.Member{Line: line, Kind: partition.MemberGUID, GUID: g, Membership: m}
}

func kw(line int, k partition.MemberKind, m partition.Membership) partition.Member {
	return partition.Member{Line: line, Kind: k, Membership: m}
}

func def(line int, name string, pkey mad.PKey, members ...partition.Member) partition.Definition {
	return partition.Definition{Line: line, Name: name, PKey: pkey, HasPKey: pkey != 0, Group: partition.DefaultGroupFlags,
		Members: members}
}

// TestParse reads the grammar OpenSM documents, one feature a case.
func TestParse(t *testing.T) {
	ipoib := def(1, "Default", 0x7fff, kw(1, partition.MemberAll, partition.Full))
	ipoib.IPoIB = true
	flags := def(1, "f", 0x10, kw(1, partition.MemberSelf, partition.Full))
	flags.IPoIB, flags.Indx0 = true, true
	flags.Group = partition.GroupFlags{MTU: 5, Rate: 7, SL: 3, Scopes: 1<<2 | 1<<5, QKey: 0xdead, TClass: 9, FlowLabel: 0x12345}
	defFull := def(1, "s", 0x80, guidMember(1, 0x123451, partition.Full), guidMember(1, 0x123452, partition.Limited),
		guidMember(1, 0x123453, partition.Full))
	defFull.DefMember = partition.Full
	mg := def(1, "Default", 0x7fff, kw(4, partition.MemberAll, partition.Full))
	mg.MGroups = []partition.MGroup{
		{Line: 2, MGID: netip.MustParseAddr("ff12:401b::707"), Flags: partition.GroupFlags{MTU: 4, Rate: 3, SL: 1}},
		{Line: 3, MGID: netip.MustParseAddr("ff12::1"), Flags: partition.GroupFlags{MTU: 2, Rate: 3, QKey: 0xdeadbeef}},
	}
	for _, tc := range []struct {
		name, text string
		want       []partition.Definition
	}{
		{"one line", "Default=0x7fff, ipoib : ALL=full ;\n", []partition.Definition{ipoib}},
		{"comments and blank lines", "# partitions\n\n  Default=0x7fff,ipoib:ALL=full; # the rest\n# end\n",
			[]partition.Definition{func() partition.Definition {
				d := def(3, "Default", 0x7fff, kw(3, partition.MemberAll, partition.Full))
				d.IPoIB = true
				return d
			}()}},
		{"members over lines", "p1=0x10 :\n 0x1=full,\n\t0x2 ,\n0x3=limited\n;\n", []partition.Definition{
			def(1, "p1", 0x10, guidMember(2, 1, partition.Full), guidMember(3, 2, partition.Limited), guidMember(4, 3, partition.Limited))}},
		{"two on a line", "a=0x1:SELF=full; b=0x2 : ALL_CAS=limited;", []partition.Definition{
			def(1, "a", 1, kw(1, partition.MemberSelf, partition.Full)),
			def(1, "b", 2, kw(1, partition.MemberAllCAs, partition.Limited))}},
		{"keywords", "k=0x3: ALL, ALL_CAS=both, ALL_SWITCHES=full, ALL_ROUTERS, SELF=full, NONE;", []partition.Definition{
			def(1, "k", 3, kw(1, partition.MemberAll, partition.Limited), kw(1, partition.MemberAllCAs, partition.Both),
				kw(1, partition.MemberAllSwitches, partition.Full), kw(1, partition.MemberAllRouters, partition.Limited),
				kw(1, partition.MemberSelf, partition.Full))}},
		{"prefixes as OpenSM reads them", "k=0x3: ALL_SW=f, ALL_C=limi, A=b, S=fu;", []partition.Definition{
			def(1, "k", 3, kw(1, partition.MemberAllSwitches, partition.Full), kw(1, partition.MemberAllCAs, partition.Limited),
				kw(1, partition.MemberAll, partition.Both), kw(1, partition.MemberSelf, partition.Full))}},
		{"GUID bases", "g=0x4: 0xABCdef=full, 0777, 1234567890123, 0xffffffffffffffff;", []partition.Definition{
			def(1, "g", 4, guidMember(1, 0xabcdef, partition.Full), guidMember(1, 0o777, partition.Limited),
				guidMember(1, 1234567890123, partition.Limited), guidMember(1, ^uint64(0), partition.Limited))}},
		{"flags", "f=0x10, ipoib, indx0, mtu=5, rate=7, sl=3, scope=2, scope=5, Q_Key=0xdead, TClass=9, FlowLabel=0x12345 : SELF=full;",
			[]partition.Definition{flags}},
		{"defmember", "s=0x80, defmember=full: 0x123451, 0x123452=limited, 0x123453;", []partition.Definition{defFull}},
		{"a P_Key alone", "0x20 : ALL;", []partition.Definition{def(1, "", 0x20, kw(1, partition.MemberAll, partition.Limited))}},
		{"a name alone", "named : ALL;", []partition.Definition{
			{Line: 1, Name: "named", Group: partition.DefaultGroupFlags, Members: []partition.Member{kw(1, partition.MemberAll, partition.Limited)}}}},
		{"no name", " : SELF;", []partition.Definition{
			{Line: 1, Group: partition.DefaultGroupFlags, Members: []partition.Member{kw(1, partition.MemberSelf, partition.Limited)}}}},
		{"membership bit in the P_Key", "m=0x8010: SELF;", []partition.Definition{def(1, "m", 0x8010, kw(1, partition.MemberSelf, partition.Limited))}},
		{"empty list", "e=0x5 : ;", []partition.Definition{def(1, "e", 5)}},
		{"mgid lines", "Default=0x7fff:\n mgid=ff12:401b::0707,sl=1 # a group\n mgid=ff12::1,Q_Key=0xDEADBEEF,mtu=2\n ALL=full;\n",
			[]partition.Definition{mg}},
		{"CRLF", "a=0x1 : SELF=full ;\r\n", []partition.Definition{def(1, "a", 1, kw(1, partition.MemberSelf, partition.Full))}},
		{"only comments", "# nothing\n   \n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := parse(t, tc.text)
			assert.Equal(t, tc.want, c.Definitions)
			assert.Empty(t, c.Warnings)
			assert.Equal(t, len(tc.want) == 0, c.Empty())
		})
	}
}

// TestParseWarnings: what OpenSM passes over with a log line is a warning
// with the line, and the definition is read as OpenSM reads it.
func TestParseWarnings(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       string // in the one warning
		check      func(*testing.T, []partition.Definition)
	}{
		{"unknown flag", "a=0x1, fancy : SELF=full;", `p.conf:1: unknown partition flag "fancy"`, nil},
		{"empty flag", "a=0x1, : SELF=full;", "p.conf:1: an empty partition flag", nil},
		{"bad mtu", "a=0x1, mtu=x : SELF;", `p.conf:1: flag mtu="x"`, nil},
		{"sl too large", "a=0x1, sl=16 : SELF;", `flag sl="16"`, func(t *testing.T, d []partition.Definition) {
			assert.Zero(t, d[0].Group.SL)
		}},
		{"bad defmember", "a=0x1, defmember=most : SELF;", `defmember "most"`, func(t *testing.T, d []partition.Definition) {
			assert.Equal(t, partition.Limited, d[0].DefMember)
		}},
		{"unknown membership", "a=0x1 :\n SELF=owner;", `p.conf:2: port SELF: unknown membership "owner" (taken as limited`,
			func(t *testing.T, d []partition.Definition) {
				assert.Equal(t, partition.Limited, d[0].Members[0].Membership)
			}},
		{"membership without a port", "a=0x1 : =full, SELF;", `p.conf:1: a membership "full" with no port`,
			func(t *testing.T, d []partition.Definition) { assert.Len(t, d[0].Members, 1) }},
		{"not ended", "a=0x1 : SELF=full,\n 0x2", `p.conf:1: the definition is not ended by ';'`,
			func(t *testing.T, d []partition.Definition) { assert.Len(t, d[0].Members, 2) }},
		{"mgid not multicast", "a=0x1 : mgid=fe80::1\n SELF;", `p.conf:1: mgid fe80::1 is not a multicast GID`,
			func(t *testing.T, d []partition.Definition) {
				assert.Empty(t, d[0].MGroups)
				assert.Len(t, d[0].Members, 1)
			}},
		{"mgid not a GID", "a=0x1 : mgid=banana;", `mgid "banana" is not a GID`, nil},
		{"mgid flag unknown", "a=0x1 : mgid=ff12::1,color=red;", `unknown multicast group flag "color"`,
			func(t *testing.T, d []partition.Definition) { assert.Len(t, d[0].MGroups, 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := parse(t, tc.text)
			require.Len(t, c.Warnings, 1, "%q", c.Warnings)
			assert.Contains(t, c.Warnings[0], tc.want)
			require.Len(t, c.Definitions, 1)
			if tc.check != nil {
				tc.check(t, c.Definitions)
			}
		})
	}
}

// TestParseErrors: what OpenSM refuses, and the few things it takes by
// accident, are errors naming the file and line.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"no colon", "Default=0x7fff ALL=full;", "p.conf:1: no partition definition"},
		{"colon on the next line", "a=0x1\n : SELF;", "p.conf:1: no partition definition"},
		{"empty definition", "a=0x1 : SELF;\n\n ;", "p.conf:3: empty partition definition"},
		{"bad P_Key", "a=zz : SELF;", `p.conf:1: bad P_Key "zz"`},
		{"empty P_Key", "a= : SELF;", `p.conf:1: bad P_Key ""`},
		{"P_Key too large", "a=0x18010 : SELF;", `p.conf:1: bad P_Key "0x18010": too large`},
		{"a name starting with a digit", "5abc : SELF;", `bad P_Key "5abc"`},
		{"signed P_Key", "a=-1 : SELF;", `bad P_Key "-1"`},
		{"bad GUID", "a=0x1 :\n 0xzz;", `p.conf:2: bad port GUID "0xzz"`},
		{"lower-case keyword", "a=0x1 : all;", `bad port GUID "all"`},
		{"GUID 0", "a=0x1 : 0x0=full;", `p.conf:1: bad port GUID "0x0": 0 is no port`},
		{"GUID too large", "a=0x1 : 0x10000000000000000;", "too large"},
		{"octal digit 8", "a=0x1 : 08;", `bad port GUID "08"`},
		{"empty membership", "a=0x1 : ALL=;", "p.conf:1: port ALL: empty membership"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := partition.Parse(strings.NewReader(tc.text), "p.conf")
			require.Error(t, err)
			var pe *partition.Error
			require.True(t, errors.As(err, &pe), "%T", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestLoad: a file is read by its path; one that is missing is an error.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "partitions.conf")
	require.NoError(t, os.WriteFile(path, []byte("Default=0x7fff : ALL=full ;\n"), 0o644))
	c, err := partition.Load(path)
	require.NoError(t, err)
	assert.Equal(t, path, c.File)
	assert.Len(t, c.Definitions, 1)
	_, err = partition.Load(filepath.Join(dir, "missing.conf"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = partition.Parse(strings.NewReader("x"), "inline")
	assert.ErrorContains(t, err, "inline:1:")
}

// TestEnforceText: the modes read and write by name, as flags take them.
func TestEnforceText(t *testing.T) {
	for _, e := range []partition.Enforce{partition.EnforceBoth, partition.EnforceIn, partition.EnforceOut, partition.EnforceOff} {
		b, err := e.MarshalText()
		require.NoError(t, err)
		var back partition.Enforce
		require.NoError(t, back.UnmarshalText(b))
		assert.Equal(t, e, back)
	}
	assert.Equal(t, [2]bool{true, true}, [2]bool{partition.EnforceBoth.Inbound(), partition.EnforceBoth.Outbound()})
	assert.Equal(t, [2]bool{true, false}, [2]bool{partition.EnforceIn.Inbound(), partition.EnforceIn.Outbound()})
	assert.Equal(t, [2]bool{false, true}, [2]bool{partition.EnforceOut.Inbound(), partition.EnforceOut.Outbound()})
	assert.Equal(t, [2]bool{false, false}, [2]bool{partition.EnforceOff.Inbound(), partition.EnforceOff.Outbound()})
	var e partition.Enforce
	assert.ErrorContains(t, e.UnmarshalText([]byte("sideways")), "both, in, out, off")
	_, err := partition.Enforce(9).MarshalText()
	assert.Error(t, err)
}
