// Package cache is what the subnet manager remembers of the ports from
// one sweep to the next, and across restarts through files: the LIDs it
// gave each port GUID (LIDMap, in OpenSM's guid2lid format) and the
// M_Key each management port holds (MKeys, with the route the SM met it
// by; its file, MKeyCache, in the format of OpenSM's guid2mkey with the
// route added).
//
// It is a package of its own so that the SM's sweeps, assimilations and
// elections reach these caches through the small interfaces package sm
// declares (sm.LIDCache, sm.KeyCache) rather than through their maps, and
// so that the file formats, their parsers and the LID assignment rules
// are tested without a fabric. The caches know nothing of the SM: the SM
// says when a sweep starts, what it met where, and what the ports
// answered; the M_Key manager's events and counters stay in sm. Neither
// cache has a lock: both belong to the SM's goroutine.
package cache
