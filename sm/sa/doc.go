// Package sa is ibsm's Subnet Administrator (IBA chapter 15): it answers
// SubnAdm (class 0x03) queries at the master SM's port from the SM's view
// of the fabric (sm.View), keeps service registrations, event
// subscriptions and multicast groups, and asks the SM to program the
// switches' multicast forwarding tables.
//
// The SM calls it from its own goroutine (sm.SubnetAdmin): HandleMAD for
// each SubnAdm MAD, Update after each sweep, TakeSets and SetDone for the
// MFT blocks. Nothing in it blocks: an answer is built at once and handed
// to a Sender, which puts it on the wire as one MAD or, longer, as RMPP
// segments.
//
// Queries. Get, GetTable, Set and Delete are matched per record: every
// component the request's ComponentMask selects must equal the
// request's, by the layouts of wire/mad (reserved components ignored).
// PathRecord, MCMemberRecord and the selectors of rate, MTU and packet
// lifetime have their own rules (path.go, mcast.go). Bad queries get the
// spec's statuses: an unknown attribute or a method the attribute does
// not take MethodAttrUnsupported, a method the class lacks
// MethodUnsupported, a Get with no match NoRecords and with several
// TooManyRecords, a Set missing required components
// ReqInsufficientComponents, a GID that names no port ReqInvalidGID.
package sa
