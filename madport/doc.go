// Package madport is the seam between management software (an SM, a
// diagnostic) and the port its MADs go through: the ibsim client protocol
// (Debian's ibsim, or a soft HCA's attach point), the kernel's umad device
// on a real HCA, or an in-memory fake in unit tests. The consumer above it
// (package sm) does transactions, windows and retries; a Port only moves
// single MADs with their addressing, like a umad file descriptor does.
package madport
