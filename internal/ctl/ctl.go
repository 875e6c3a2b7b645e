package ctl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// MaxLine bounds one request line a Server reads; a longer request is refused
// and the connection closed.
const MaxLine = 1 << 20

// MaxResponse bounds one response line a Client reads: the status of a
// management plane of 49,151 nodes is some 100 MB (1 MiB held 400).
const MaxResponse = 1 << 30

// Request is one control call.
type Request struct {
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Response is the answer to one Request.
type Response struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// ErrUnknownOp is what a Handler returns for an op it does not serve.
var ErrUnknownOp = errors.New("unknown op")

// Handler serves one request. ctx ends when the server closes. Its result
// is marshalled into Response.Result.
type Handler func(ctx context.Context, op string, args json.RawMessage) (any, error)

// Stats counts what a Server did.
type Stats struct {
	Conns    uint64 `json:"conns"`
	Requests uint64 `json:"requests"`
	Errors   uint64 `json:"errors"`    // requests answered with an error
	BadLines uint64 `json:"bad_lines"` // lines that were not a request
}

// Server serves a Handler on a unix socket.
type Server struct {
	ln      net.Listener
	path    string
	h       Handler
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	closed  bool
	nconns  atomic.Uint64
	reqs    atomic.Uint64
	errs    atomic.Uint64
	badLine atomic.Uint64
}

// Listen creates the socket at path, replacing a stale one left by a
// process that died, and serves h on it until Close.
func Listen(path string, h Handler) (*Server, error) {
	if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
		c.Close()
		return nil, fmt.Errorf("ctl: %s: another process serves it", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("ctl: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("ctl: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{ln: ln, path: path, h: h, ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Path returns the socket's path.
func (s *Server) Path() string { return s.path }

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	return Stats{Conns: s.nconns.Load(), Requests: s.reqs.Load(), Errors: s.errs.Load(), BadLines: s.badLine.Load()}
}

// Close stops accepting, closes every connection, waits for the handlers
// and removes the socket file.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.cancel()
	err := s.ln.Close() // the unix listener removes its file
	s.wg.Wait()
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		s.nconns.Add(1)
		go s.serve(c)
	}
}

func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 0, 4096), MaxLine)
	enc := json.NewEncoder(c)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var req Request
		var resp Response
		if err := json.Unmarshal(line, &req); err != nil || req.Op == "" {
			s.badLine.Add(1)
			resp.Error = "bad request: want {\"op\":NAME,\"args\":{...}}"
			if err != nil {
				resp.Error += ": " + err.Error()
			}
		} else {
			s.reqs.Add(1)
			resp = s.call(req)
		}
		if !resp.OK {
			s.errs.Add(1)
		}
		if err := enc.Encode(&resp); err != nil {
			return
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		s.badLine.Add(1)
		enc.Encode(&Response{Error: fmt.Sprintf("request longer than %d bytes", MaxLine)})
	}
}

// call runs the handler, turning a panic into an error response so that a
// bug in one op cannot take the node down with it.
func (s *Server) call(req Request) (resp Response) {
	defer func() {
		if r := recover(); r != nil {
			resp = Response{Error: fmt.Sprintf("op %s: internal error: %v", req.Op, r)}
		}
	}()
	res, err := s.h(s.ctx, req.Op, req.Args)
	if err != nil {
		return Response{Error: err.Error()}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return Response{Error: fmt.Sprintf("op %s: result: %v", req.Op, err)}
	}
	return Response{OK: true, Result: b}
}

// Client is a connection to a node's control socket. Calls are serialized.
type Client struct {
	mu   sync.Mutex
	c    net.Conn
	sc   *bufio.Scanner
	path string
}

// Dial connects to the control socket at path.
func Dial(path string) (*Client, error) {
	c, err := net.DialTimeout("unix", path, 2*time.Second)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 0, 64<<10), MaxResponse)
	return &Client{c: c, sc: sc, path: path}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.c.Close() }

// Call sends op with args (nil for none) and decodes the result into
// result (nil to discard it). ctx bounds the whole call.
func (c *Client) Call(ctx context.Context, op string, args, result any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	req := Request{Op: op}
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return err
		}
		req.Args = b
	}
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	// The deadline is set only once ctx is done, so that a timed-out call
	// reports ctx's error.
	c.c.SetDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { c.c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := c.c.Write(append(line, '\n')); err != nil {
		return c.fail(ctx, op, err)
	}
	if !c.sc.Scan() {
		err := c.sc.Err()
		if err == nil {
			err = errors.New("connection closed")
		}
		return c.fail(ctx, op, err)
	}
	var resp Response
	if err := json.Unmarshal(c.sc.Bytes(), &resp); err != nil {
		return fmt.Errorf("%s: %s: bad response: %w", c.path, op, err)
	}
	if !resp.OK {
		return &RemoteError{Op: op, Msg: resp.Error}
	}
	if result != nil && len(resp.Result) > 0 {
		if err := json.Unmarshal(resp.Result, result); err != nil {
			return fmt.Errorf("%s: %s: bad result: %w", c.path, op, err)
		}
	}
	return nil
}

// fail closes the connection, whose request/response pairing is lost, and
// returns err with context.
func (c *Client) fail(ctx context.Context, op string, err error) error {
	c.c.Close()
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return fmt.Errorf("%s: %s: %w", c.path, op, err)
}

// RemoteError is an error the node answered with.
type RemoteError struct {
	Op  string
	Msg string
}

func (e *RemoteError) Error() string { return e.Op + ": " + e.Msg }

// Call dials path, makes one call and closes the connection.
func Call(ctx context.Context, path, op string, args, result any) error {
	c, err := Dial(path)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Call(ctx, op, args, result)
}
