// Package umadtest is an in-memory ib_umad for tests of package umad and
// its users: a Kernel is an umad.Files whose sysfs shows the CA ports
// added to it and whose umad and issm devices behave as the kernel's do in
// what package umad relies on, over a wire that is any madport.Port (a
// memport fabric of agents, typically):
//
//   - IB_USER_MAD_ENABLE_PKEY only before any other use of a file
//     (EINVAL after), or refused (ENOTTY) on an "old kernel" port;
//   - agent registration: QP 0 or 1, at most 32 agents, the id written
//     back; unsolicited requests go to the agent whose class and method
//     mask match, other requests are dropped;
//   - writes: header and at least the 36-byte MAD and RMPP headers, a
//     registered agent; the upper 32 bits of a request's TID replaced by
//     the agent's hi_tid; a second request with a TID still in flight
//     refused (EINVAL); a request with timeout_ms waits for its response,
//     is resent retries times, then comes back with status ETIMEDOUT and
//     only its 24-byte MAD header; responses nobody waits for dropped;
//   - reads: one packet, EINVAL for a buffer too small (the packet stays
//     queued), blocking until one is queued or the file is closed;
//   - issm: holding it open sets the wire port's IsSM; a second open
//     fails with EAGAIN.
package umadtest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"ibfab/madport"
	"ibfab/madport/umad"
	"ibfab/wire/mad"
)

// PortConfig adds one CA port to a Kernel.
type PortConfig struct {
	CA   string
	Port int
	// Wire is the fabric behind the port, its own (the kernel reads it):
	// sends go to its Send, and what its Recv returns is dispatched to
	// the port's open files. Its Info feeds the port's sysfs attributes;
	// SetIsSM follows the issm device.
	Wire madport.Port
	// OldKernel makes IB_USER_MAD_ENABLE_PKEY fail with ENOTTY, as on a
	// kernel without P_Key index support.
	OldKernel bool
}

// Stats counts what a Kernel did.
type Stats struct {
	Writes         uint64 // packets sent to a wire
	Resends        uint64 // requests resent after a timeout
	Timeouts       uint64 // requests handed back with ETIMEDOUT
	Responses      uint64 // responses delivered to the agent that waited
	Unsolicited    uint64 // requests delivered to a registered agent
	DroppedResp    uint64 // responses nobody waited for
	DroppedReq     uint64 // requests no agent registered for
	RefusedWrites  uint64 // writes answered with an error
	RefusedIoctls  uint64
	QueuedOverflow uint64 // packets dropped on a full read queue
}

// Kernel is the fake. Its methods are safe for concurrent use.
type Kernel struct {
	mu      sync.Mutex
	ports   []*kport // by umad index
	hiTID   uint32
	stats   Stats
	closed  bool
	cancel  context.CancelFunc
	ctx     context.Context
	pumpsWG sync.WaitGroup
}

var _ umad.Files = (*Kernel)(nil)

type kport struct {
	k     *Kernel
	index int
	cfg   PortConfig
	files []*file
	issm  bool
}

// New returns a kernel with the given ports, umad0, umad1, ... in order.
// Close stops it.
func New(ports ...PortConfig) *Kernel {
	k := &Kernel{}
	k.ctx, k.cancel = context.WithCancel(context.Background())
	for i, c := range ports {
		kp := &kport{k: k, index: i, cfg: c}
		k.ports = append(k.ports, kp)
		k.pumpsWG.Add(1)
		go k.pump(kp)
	}
	return k
}

// Close stops the wire pumps and closes every open file. It does not
// close the wires.
func (k *Kernel) Close() {
	k.mu.Lock()
	k.closed = true
	var files []*file
	for _, p := range k.ports {
		files = append(files, p.files...)
	}
	k.mu.Unlock()
	k.cancel()
	for _, f := range files {
		f.Close()
	}
	k.pumpsWG.Wait()
}

// Stats returns the kernel's counters.
func (k *Kernel) Stats() Stats {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.stats
}

// IsSM reports whether umad device i's issm device is held open.
func (k *Kernel) IsSM(i int) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return i < len(k.ports) && k.ports[i].issm
}

// ---- sysfs

func enoent(name string) error {
	return &fs.PathError{Op: "open", Path: name, Err: syscall.ENOENT}
}

// ReadDir implements umad.Files: the umad class (absent when the kernel
// has no ports), /sys/class/infiniband and /dev/infiniband.
func (k *Kernel) ReadDir(name string) ([]string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.ports) == 0 {
		return nil, enoent(name)
	}
	var names []string
	switch name {
	case umad.SysClassMAD:
		names = append(names, "abi_version")
		for _, p := range k.ports {
			names = append(names, fmt.Sprintf("umad%d", p.index), fmt.Sprintf("issm%d", p.index))
		}
	case umad.SysClassIB:
		seen := map[string]bool{}
		for _, p := range k.ports {
			if !seen[p.cfg.CA] {
				seen[p.cfg.CA] = true
				names = append(names, p.cfg.CA)
			}
		}
	case umad.DevDir:
		for _, p := range k.ports {
			names = append(names, fmt.Sprintf("umad%d", p.index), fmt.Sprintf("issm%d", p.index))
		}
	default:
		return nil, enoent(name)
	}
	sort.Strings(names)
	return names, nil
}

// ReadFile implements umad.Files: abi_version, umadN/{ibdev,port}, and a
// CA's node_guid and its ports' lid, sm_lid, state and gids/0, the last
// ones from the wire's Info at the time of the read.
func (k *Kernel) ReadFile(name string) ([]byte, error) {
	k.mu.Lock()
	ports := k.ports
	k.mu.Unlock()
	if len(ports) == 0 {
		return nil, enoent(name)
	}
	if name == path.Join(umad.SysClassMAD, "abi_version") {
		return []byte(fmt.Sprintf("%d\n", umad.ABIVersion)), nil
	}
	if rest, ok := strings.CutPrefix(name, umad.SysClassMAD+"/umad"); ok {
		num, attr, _ := strings.Cut(rest, "/")
		i, err := strconv.Atoi(num)
		if err != nil || i < 0 || i >= len(ports) {
			return nil, enoent(name)
		}
		switch attr {
		case "ibdev":
			return []byte(ports[i].cfg.CA + "\n"), nil
		case "port":
			return []byte(fmt.Sprintf("%d\n", ports[i].cfg.Port)), nil
		}
		return nil, enoent(name)
	}
	rest, ok := strings.CutPrefix(name, umad.SysClassIB+"/")
	if !ok {
		return nil, enoent(name)
	}
	parts := strings.Split(rest, "/")
	for _, p := range ports {
		if p.cfg.CA != parts[0] {
			continue
		}
		info, err := p.cfg.Wire.Info()
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		if len(parts) == 2 && parts[1] == "node_guid" {
			return []byte(groups(info.NodeGUID) + "\n"), nil
		}
		if len(parts) < 4 || parts[1] != "ports" || parts[2] != strconv.Itoa(p.cfg.Port) {
			continue
		}
		switch strings.Join(parts[3:], "/") {
		case "lid":
			return []byte(fmt.Sprintf("0x%x\n", info.LID)), nil
		case "sm_lid":
			return []byte(fmt.Sprintf("0x%x\n", info.SMLID)), nil
		case "state":
			return []byte(fmt.Sprintf("%d: %s\n", info.State, stateName(info.State))), nil
		case "gids/0":
			return []byte("fe80:0000:0000:0000:" + groups(info.PortGUID) + "\n"), nil
		}
	}
	return nil, enoent(name)
}

func groups(v uint64) string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x", v>>48, v>>32&0xffff, v>>16&0xffff, v&0xffff)
}

func stateName(s uint8) string {
	names := []string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}
	if int(s) < len(names) {
		return names[s]
	}
	return "UNKNOWN"
}

// ---- device files

// OpenDevice implements umad.Files for /dev/infiniband/umadN and issmN.
func (k *Kernel) OpenDevice(name string, nonblock bool) (umad.Device, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENXIO}
	}
	rest, ok := strings.CutPrefix(name, umad.DevDir+"/")
	if !ok {
		return nil, enoent(name)
	}
	kind, num := strings.TrimRight(rest, "0123456789"), strings.TrimLeft(rest, "abcdefghijklmnopqrstuvwxyz")
	i, err := strconv.Atoi(num)
	if err != nil || i < 0 || i >= len(k.ports) {
		return nil, enoent(name)
	}
	p := k.ports[i]
	switch kind {
	case "umad":
		f := &file{p: p, wake: make(chan struct{})}
		p.files = append(p.files, f)
		return f, nil
	case "issm":
		if p.issm {
			// The kernel's open blocks on a held issm unless O_NONBLOCK;
			// the fake never blocks.
			return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EAGAIN}
		}
		if err := p.cfg.Wire.SetIsSM(true); err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		p.issm = true
		return &issmFile{p: p}, nil
	}
	return nil, enoent(name)
}

// issmFile is an open issm device: no operations but close.
type issmFile struct {
	p      *kport
	closed bool
}

func (f *issmFile) Read([]byte) (int, error)  { return 0, syscall.EINVAL }
func (f *issmFile) Write([]byte) (int, error) { return 0, syscall.EINVAL }
func (f *issmFile) Ioctl(uint, []byte) error  { return syscall.ENOTTY }
func (f *issmFile) Close() error {
	k := f.p.k
	k.mu.Lock()
	defer k.mu.Unlock()
	if f.closed {
		return fs.ErrClosed
	}
	f.closed = true
	f.p.issm = false
	return f.p.cfg.Wire.SetIsSM(false)
}

// file is an open umad device.
type file struct {
	p        *kport
	usePKey  bool
	used     bool
	closed   bool
	agents   [umad.MaxAgents]*agent
	queue    []packet
	wake     chan struct{} // closed and replaced when queue grows or on close
	inflight []*send
}

type agent struct {
	id    uint32
	hiTID uint32
	reg   umad.RegReq
}

// packet is one queued read: header fields and the MAD bytes to return.
type packet struct {
	h   umad.HeaderFields
	mad []byte
}

// send is a request waiting for its response.
type send struct {
	f       *file
	a       *agent
	h       umad.HeaderFields
	mad     []byte
	tid     uint64
	class   uint8
	retries uint32
	timer   *time.Timer
}

const queueLimit = 1 << 14

func (f *file) hdrSize() int {
	if f.usePKey {
		return umad.HeaderSize
	}
	return umad.OldHeaderSize
}

// Ioctl implements umad.Device.
func (f *file) Ioctl(req uint, arg []byte) error {
	k := f.p.k
	k.mu.Lock()
	defer k.mu.Unlock()
	err := f.ioctlLocked(req, arg)
	if err != nil {
		k.stats.RefusedIoctls++
	}
	return err
}

func (f *file) ioctlLocked(req uint, arg []byte) error {
	if f.closed {
		return syscall.EBADF
	}
	switch req {
	case umad.IoctlEnablePKey:
		if f.p.cfg.OldKernel {
			return syscall.ENOTTY
		}
		if f.used {
			return syscall.EINVAL
		}
		f.usePKey = true
		return nil
	case umad.IoctlRegisterAgent:
		r, err := umad.DecodeRegReq(arg)
		if err != nil {
			return syscall.EFAULT
		}
		if r.QPN != 0 && r.QPN != 1 {
			return syscall.EINVAL
		}
		if umad.IsSMIClass(r.MgmtClass) != (r.QPN == 0) && r.MgmtClass != 0 {
			return syscall.EINVAL
		}
		id := -1
		for i, a := range f.agents {
			if a == nil {
				id = i
				break
			}
		}
		if id < 0 {
			return syscall.ENOMEM
		}
		f.p.k.hiTID++
		f.agents[id] = &agent{id: uint32(id), hiTID: f.p.k.hiTID, reg: r}
		f.used = true
		r.ID = uint32(id)
		copy(arg, r.Encode())
		return nil
	case umad.IoctlUnregisterAgent:
		if len(arg) != 4 {
			return syscall.EFAULT
		}
		id := int(arg[0]) | int(arg[1])<<8 | int(arg[2])<<16 | int(arg[3])<<24
		if id < 0 || id >= umad.MaxAgents || f.agents[id] == nil {
			return syscall.EINVAL
		}
		f.agents[id] = nil
		return nil
	}
	return syscall.ENOTTY
}

// Write implements umad.Device: one packet.
func (f *file) Write(b []byte) (int, error) {
	k := f.p.k
	k.mu.Lock()
	s, wireMAD, err := f.writeLocked(b)
	if err != nil {
		k.stats.RefusedWrites++
		k.mu.Unlock()
		return 0, err
	}
	k.stats.Writes++
	wire := f.p.cfg.Wire
	k.mu.Unlock()
	// Outside the lock: a synchronous wire answers at once, and the pump
	// takes the lock to deliver.
	if err := wire.Send(wireMAD); err != nil {
		k.mu.Lock()
		if s != nil {
			f.dropSendLocked(s)
		}
		k.mu.Unlock()
		return 0, syscall.EIO
	}
	return len(b), nil
}

func (f *file) writeLocked(b []byte) (*send, madport.MAD, error) {
	if f.closed {
		return nil, madport.MAD{}, syscall.EBADF
	}
	hs := f.hdrSize()
	if len(b) < hs+36 {
		return nil, madport.MAD{}, syscall.EINVAL
	}
	h := umad.Header(b[:hs]).Fields()
	if h.AgentID >= umad.MaxAgents {
		return nil, madport.MAD{}, syscall.EINVAL
	}
	a := f.agents[h.AgentID]
	if a == nil {
		return nil, madport.MAD{}, syscall.EIO
	}
	f.used = true
	data := make([]byte, umad.MADSize)
	copy(data, b[hs:])
	m := mad.MAD(data)
	resp := m.Method().IsResponse() || m.Method() == mad.MethodTrapRepress
	if !resp {
		m.SetTransactionID(uint64(a.hiTID)<<32 | m.TransactionID()&0xffffffff)
	}
	class := uint8(m.MgmtClass())
	for _, o := range f.inflight {
		if o.tid == m.TransactionID() && o.class == class && !resp {
			return nil, madport.MAD{}, syscall.EINVAL
		}
	}
	wm := madport.MAD{LID: h.LID, QP: h.QPN, QKey: h.QKey, SL: h.SL, Data: data}
	if resp || h.TimeoutMS == 0 {
		return nil, wm, nil
	}
	s := &send{f: f, a: a, h: h, mad: append([]byte(nil), data...), tid: m.TransactionID(), class: class, retries: h.Retries}
	f.inflight = append(f.inflight, s)
	s.timer = time.AfterFunc(time.Duration(h.TimeoutMS)*time.Millisecond, func() { f.expire(s) })
	return s, wm, nil
}

// expire resends s or hands it back with ETIMEDOUT.
func (f *file) expire(s *send) {
	k := f.p.k
	k.mu.Lock()
	if !f.dropSendLocked(s) {
		k.mu.Unlock()
		return // answered meanwhile
	}
	if s.retries > 0 && !f.closed {
		s.retries--
		f.inflight = append(f.inflight, s)
		s.timer = time.AfterFunc(time.Duration(s.h.TimeoutMS)*time.Millisecond, func() { f.expire(s) })
		k.stats.Resends++
		wire := f.p.cfg.Wire
		m := madport.MAD{LID: s.h.LID, QP: s.h.QPN, QKey: s.h.QKey, SL: s.h.SL, Data: append([]byte(nil), s.mad...)}
		k.mu.Unlock()
		wire.Send(m)
		return
	}
	k.stats.Timeouts++
	h := s.h
	h.Status = umad.StatusTimeout
	f.queueLocked(packet{h: h, mad: s.mad[:umad.MADHeaderSize]})
	k.mu.Unlock()
}

// dropSendLocked removes s from the in-flight list and stops its timer;
// it reports whether s was there.
func (f *file) dropSendLocked(s *send) bool {
	for i, o := range f.inflight {
		if o == s {
			f.inflight = append(f.inflight[:i], f.inflight[i+1:]...)
			s.timer.Stop()
			return true
		}
	}
	return false
}

func (f *file) queueLocked(p packet) {
	if f.closed {
		return
	}
	if len(f.queue) >= queueLimit {
		f.p.k.stats.QueuedOverflow++
		return
	}
	f.queue = append(f.queue, p)
	close(f.wake)
	f.wake = make(chan struct{})
}

// Read implements umad.Device: the next packet, blocking.
func (f *file) Read(b []byte) (int, error) {
	k := f.p.k
	for {
		k.mu.Lock()
		if f.closed {
			k.mu.Unlock()
			return 0, fs.ErrClosed
		}
		if len(f.queue) > 0 {
			p := f.queue[0]
			hs := f.hdrSize()
			if len(b) < hs+len(p.mad) {
				k.mu.Unlock()
				return 0, syscall.EINVAL
			}
			f.queue = f.queue[1:]
			k.mu.Unlock()
			p.h.Length = uint32(hs + len(p.mad))
			umad.Header(b[:hs]).Encode(&p.h)
			return hs + copy(b[hs:], p.mad), nil
		}
		wake := f.wake
		k.mu.Unlock()
		<-wake
	}
}

// Close implements umad.Device: the agents go, and a blocked Read returns.
func (f *file) Close() error {
	k := f.p.k
	k.mu.Lock()
	defer k.mu.Unlock()
	if f.closed {
		return fs.ErrClosed
	}
	f.closed = true
	for _, s := range f.inflight {
		s.timer.Stop()
	}
	f.inflight = nil
	f.queue = nil
	close(f.wake)
	for i, o := range f.p.files {
		if o == f {
			f.p.files = append(f.p.files[:i], f.p.files[i+1:]...)
			break
		}
	}
	return nil
}

// ---- the wire

// pump dispatches what the wire hands up to the port's files.
func (k *Kernel) pump(p *kport) {
	defer k.pumpsWG.Done()
	for {
		m, err := p.cfg.Wire.Recv(k.ctx)
		if err != nil {
			if k.ctx.Err() != nil || errors.Is(err, madport.ErrClosed) {
				return
			}
			continue
		}
		k.mu.Lock()
		k.deliverLocked(p, m)
		k.mu.Unlock()
	}
}

func (k *Kernel) deliverLocked(p *kport, m madport.MAD) {
	if len(m.Data) < umad.MADHeaderSize {
		k.stats.DroppedReq++
		return
	}
	data := make([]byte, umad.MADSize)
	copy(data, m.Data)
	h := mad.MAD(data)
	hdr := umad.HeaderFields{Length: umad.MADSize, QPN: m.QP, LID: m.LID, SL: m.SL}
	if h.Method().IsResponse() || h.Method() == mad.MethodTrapRepress {
		for _, f := range p.files {
			for _, s := range f.inflight {
				if s.tid == h.TransactionID() && s.class == uint8(h.MgmtClass()) {
					f.dropSendLocked(s)
					hdr.AgentID = s.a.id
					f.queueLocked(packet{h: hdr, mad: data})
					k.stats.Responses++
					return
				}
			}
		}
		k.stats.DroppedResp++
		return
	}
	for _, f := range p.files {
		for _, a := range f.agents {
			if a != nil && a.reg.MgmtClass == uint8(h.MgmtClass()) && uint8(h.Method()) < 128 && a.reg.HasMethod(uint8(h.Method())) {
				hdr.AgentID = a.id
				f.queueLocked(packet{h: hdr, mad: data})
				k.stats.Unsolicited++
				return
			}
		}
	}
	k.stats.DroppedReq++
}
