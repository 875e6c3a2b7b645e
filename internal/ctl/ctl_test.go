package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func echoHandler(ctx context.Context, op string, args json.RawMessage) (any, error) {
	switch op {
	case "echo":
		var v map[string]any
		if err := json.Unmarshal(args, &v); err != nil {
			return nil, err
		}
		return v, nil
	case "panic":
		panic("boom")
	case "block":
		<-ctx.Done()
		return nil, ctx.Err()
	case "slow":
		time.Sleep(200 * time.Millisecond)
		return "late", nil
	}
	return nil, ErrUnknownOp
}

func newServer(t *testing.T) *Server {
	t.Helper()
	return newServerWith(t, echoHandler)
}

func newServerWith(t *testing.T, h Handler) *Server {
	t.Helper()
	s, err := Listen(filepath.Join(t.TempDir(), "n.sock"), h)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestCalls(t *testing.T) {
	s := newServer(t)
	c, err := Dial(s.Path())
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()

	var got map[string]any
	require.NoError(t, c.Call(ctx, "echo", map[string]int{"a": 1}, &got))
	require.Equal(t, map[string]any{"a": 1.0}, got)

	tests := []struct {
		op      string
		wantErr string
	}{
		{"nope", "unknown op"},
		{"panic", "internal error: boom"},
		{"echo", "unexpected end of JSON input"}, // no args
	}
	for _, tc := range tests {
		err := c.Call(ctx, tc.op, nil, nil)
		var re *RemoteError
		require.ErrorAs(t, err, &re, tc.op)
		require.Contains(t, re.Msg, tc.wantErr, tc.op)
	}
	// The connection still serves after errors and a panic.
	require.NoError(t, c.Call(ctx, "echo", map[string]int{"b": 2}, &got))
	st := s.Stats()
	require.EqualValues(t, 5, st.Requests)
	require.EqualValues(t, 3, st.Errors)
}

func TestBadLines(t *testing.T) {
	s := newServer(t)
	conn, err := net.Dial("unix", s.Path())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("not json\n{\"args\":{}}\n"))
	require.NoError(t, err)
	buf := make([]byte, 4096)
	var all string
	for strings.Count(all, "\n") < 2 {
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := conn.Read(buf)
		require.NoError(t, err)
		all += string(buf[:n])
	}
	require.Equal(t, 2, strings.Count(all, `"ok":false`))
	require.EqualValues(t, 2, s.Stats().BadLines)
}

func TestTimeoutAndClose(t *testing.T) {
	blocking := make(chan struct{}, 1) // the "block" handler has begun
	s := newServerWith(t, func(ctx context.Context, op string, args json.RawMessage) (any, error) {
		if op == "block" {
			blocking <- struct{}{}
		}
		return echoHandler(ctx, op, args)
	})
	c, err := Dial(s.Path())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = c.Call(ctx, "slow", nil, nil)
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)

	// A handler blocked on ctx ends when the server closes.
	done := make(chan error, 1)
	go func() { done <- Call(context.Background(), s.Path(), "block", nil, nil) }()
	select {
	case <-blocking:
	case err := <-done:
		t.Fatalf("block returned before the server closed: %v", err)
	}
	require.NoError(t, s.Close())
	require.Error(t, <-done)
	_, err = Dial(s.Path())
	require.Error(t, err, "socket removed")
}

func TestListenRefusesLiveSocket(t *testing.T) {
	s := newServer(t)
	_, err := Listen(s.Path(), echoHandler)
	require.ErrorContains(t, err, "another process serves it")
}

// TestLongResponse: a response far longer than a request may be (the
// status of a large management plane) reaches the client whole.
func TestLongResponse(t *testing.T) {
	long := strings.Repeat("x", 4*MaxLine)
	s := newServerWith(t, func(context.Context, string, json.RawMessage) (any, error) { return long, nil })
	var got string
	require.NoError(t, Call(context.Background(), s.Path(), "status", nil, &got))
	require.Equal(t, long, got)
}
