package netnstest_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"ibfab/internal/testsupport/netnstest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/link/linktest"
)

func TestName(t *testing.T) {
	a, b := netnstest.Name("x"), netnstest.Name("x")
	assert.NotEqual(t, a, b)
	assert.True(t, strings.HasPrefix(a, netnstest.Prefix), a)
	assert.True(t, strings.HasSuffix(a, "x"), a)
}

func TestNamespacesAndVeth(t *testing.T) {
	linktest.LeakCheck(t)
	testenv.RequireRoot(t)
	nameA, nameB := netnstest.Name("a"), netnstest.Name("b")
	ifA := fmt.Sprintf("%s%dva", netnstest.Prefix, os.Getpid())
	ifB := fmt.Sprintf("%s%dvb", netnstest.Prefix, os.Getpid())
	t.Run("create", func(t *testing.T) {
		nsA := netnstest.NewNS(t, nameA)
		nsB := netnstest.NewNS(t, nameB)
		netnstest.VethPair(t, nsA, ifA, nsB, ifB)
		tests := []struct {
			name       string
			ns         netns.NsHandle
			have, lack string
		}{
			{"end a", nsA, ifA, ifB},
			{"end b", nsB, ifB, ifA},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				err := netnstest.Do(tt.ns, func() error {
					l, err := netlink.LinkByName(tt.have)
					if err != nil {
						return err
					}
					assert.Equal(t, netnstest.MTU, l.Attrs().MTU)
					assert.NotZero(t, l.Attrs().RawFlags&1, "%s is not up", tt.have) // IFF_UP
					_, err = netlink.LinkByName(tt.lack)
					assert.Error(t, err, "%s is visible in the wrong namespace", tt.lack)
					lo, err := netlink.LinkByName("lo")
					if err != nil {
						return err
					}
					assert.NotZero(t, lo.Attrs().RawFlags&1, "loopback is not up")
					return nil
				})
				require.NoError(t, err)
			})
		}
		require.NoError(t, netnstest.SetUp(nsA, ifA, false))
		require.NoError(t, netnstest.Do(nsA, func() error {
			l, err := netlink.LinkByName(ifA)
			if err == nil {
				assert.Zero(t, l.Attrs().RawFlags&1, "%s is still up", ifA)
			}
			return err
		}))
		_, err := netlink.LinkByName(ifA)
		assert.Error(t, err, "%s leaked into the test's own namespace", ifA)
	})
	for _, n := range []string{nameA, nameB} {
		_, err := os.Stat(filepath.Join("/run/netns", n))
		assert.True(t, errors.Is(err, os.ErrNotExist), "namespace %s left behind: %v", n, err)
	}
}

func TestDoReturnsError(t *testing.T) {
	testenv.RequireRoot(t)
	ns := netnstest.NewNS(t, netnstest.Name("d"))
	want := errors.New("boom")
	assert.ErrorIs(t, netnstest.Do(ns, func() error { return want }), want)
	assert.Error(t, netnstest.Do(netns.None(), func() error { return nil }), "entering a closed handle")
}
