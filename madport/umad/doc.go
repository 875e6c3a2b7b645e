// Package umad is a madport.Port on a real HCA: the kernel's ib_umad
// character device /dev/infiniband/umadN, as OpenSM and the
// infiniband-diags tools use it through libibumad, spoken directly.
//
//	p, err := umad.Open(umad.Config{CA: "mlx5_0", Port: 1})
//	p.Send(madport.MAD{LID: 0xffff, Data: smp})
//	m, err := p.Recv(ctx)
//
// # Opening
//
// Open finds the umad device of a CA port through sysfs
// (/sys/class/infiniband_mad/umadN/{ibdev,port}, after checking
// abi_version), opens it, asks for the header with P_Key indexes
// (IB_USER_MAD_ENABLE_PKEY, which must come first; a kernel that refuses
// gets the old 56-byte header) and registers one agent per management
// class (IB_USER_MAD_REGISTER_AGENT): by default, for an SM, both SMP
// classes on QP0 with Get, Set, Trap and TrapRepress as the unsolicited
// methods it wants. A machine without RDMA devices, or without the ib_umad
// module, has no /sys/class/infiniband_mad: Open says so (ErrNoUMAD).
//
// # MADs
//
// Every read and write is one packet: a struct ib_user_mad_hdr (abi.go)
// then the MAD. Send fills the header from the madport.MAD (agent of the
// MAD's class, remote QP, Q_Key, LID, SL) and, for a request that solicits
// a response, Config.Timeout and Config.Retries: the kernel then matches
// the response by TID, resends on its own, and finally hands the request
// back with status ETIMEDOUT (StatusTimeout) and only its 24-byte common
// header, which Recv returns zero-padded with madport.MAD.Status set. The
// kernel writes its agent's hi_tid into the upper 32 bits of every
// request's TID and refuses a second request with a TID still in flight;
// the Port puts the caller's upper bits back into responses and timeouts.
// A response that arrives after the kernel gave up is dropped by the
// kernel, so a caller with its own timeouts (package sm) gives the kernel
// a shorter one, no retries, and retries itself.
//
// # The SM capability
//
// SetIsSM(true) opens the port's issm device, which makes the kernel set
// PortInfo.CapabilityMask.IsSM; SetIsSM(false) and Close close it. Only
// one process can hold it: a second SM on the port gets ErrSMPresent.
//
// # Testing
//
// The device file operations (open, read, write, ioctl) and sysfs go
// through the Files interface: OS is the machine, and package umadtest is
// an in-memory kernel that behaves as ib_umad does in what this package
// relies on, over any madport.Port as its wire.
package umad
