// Package tidmemo remembers the upper bits of request TIDs that the MAD
// stack under a madport.Port writes over: ibsim (and our attach point)
// put the client's slot in bits 63-48, the kernel's umad layer the agent's
// hi_tid in bits 63-32. A port records each request's TID as its caller
// sent it and restores it on the response, so callers see their own TIDs.
package tidmemo
