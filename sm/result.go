package sm

import "ibfab/sm/routing/multipath"

// Result is one sweep's outcome; it marshals to the JSON line ibsm
// prints. The fields up to ms_total are fixed; later ones may be added to
// but are never renamed.
type Result struct {
	Event           string  `json:"event"`
	SubnetUp        bool    `json:"subnet_up"`
	Switches        int     `json:"switches"`
	HCAs            int     `json:"hcas"`
	Routing         string  `json:"routing"`
	EntriesComputed int     `json:"entries_computed"`
	Phases          []Phase `json:"phases"`
	SMPsTotal       uint64  `json:"smps_total"`
	MsTotal         float64 `json:"ms_total"`

	Sweep        int      `json:"sweep"`
	Reason       string   `json:"reason,omitempty"`
	SMState      string   `json:"sm_state"`
	SMLID        uint16   `json:"sm_lid"`
	Routers      int      `json:"routers,omitempty"`
	Links        int      `json:"links"`
	MaxLID       uint16   `json:"max_lid"`
	DefaultPorts int      `json:"default_ports,omitempty"`
	LFTEntries   int      `json:"lft_entries"`
	LFTBlocks    int      `json:"lft_blocks"` // LFT blocks sent
	DeadlockFree bool     `json:"deadlock_free"`
	RouteMs      float64  `json:"route_ms"`  // the engine's share of the routing phase
	VerifyMs     float64  `json:"verify_ms"` // the verifier's
	Retries      uint64   `json:"retries"`
	Timeouts     uint64   `json:"timeouts"`
	WindowMin    int      `json:"window_min"` // the narrowest the SMP window got (Config.Window: no timeouts)
	Problems     []string `json:"problems,omitempty"`
	Warnings     []string `json:"warnings,omitempty"`
	// SMPsByAttr counts the SMPs sent, retries included, by method and
	// attribute ("Set SLtoVLMappingTable"): what a full sweep wrote, in
	// the terms another SM's trace has (assimilations leave it out).
	SMPsByAttr map[string]uint64 `json:"smps_by_attr,omitempty"`

	// RoutesKept: the sweep took a subnet over from another master and
	// kept the forwarding tables the switches held (routing "kept").
	RoutesKept bool `json:"routes_kept,omitempty"`

	// CC is what the congestion control manager did (Config.CC).
	CC *CCResult `json:"cc,omitempty"`
	// AR is what the adaptive routing manager did (Config.AR).
	AR *ARResult `json:"ar,omitempty"`
	// Partitions is what the partition manager did (Config.Partitions).
	Partitions *PartitionResult `json:"partitions,omitempty"`
	// Multipath is what multipath routing on the LMC aliases did
	// (Config.LMC > 0): fallbacks, path lengths per layer, disjointness.
	Multipath *multipath.Stats `json:"multipath,omitempty"`

	// Assimilations (event "assimilation") only; see Assimilate.
	Trigger      Trigger      `json:"trigger,omitempty"`
	Discovery    Discovery    `json:"discovery,omitempty"`
	Distribution Distribution `json:"distribution,omitempty"` // the strategy used
	// MsToConnectivity is the time from the start of the assimilation
	// until every switch holds a verified route set (provisional or
	// final) and every port is Active again.
	MsToConnectivity   *float64 `json:"ms_to_connectivity,omitempty"`
	Provisional        bool     `json:"provisional,omitempty"`
	ProvisionalRouting string   `json:"provisional_routing,omitempty"`
	ProvisionalEntries int      `json:"provisional_entries,omitempty"`
	Changes            []string `json:"changes,omitempty"` // what detection found
	NodesAdded         int      `json:"nodes_added,omitempty"`
	NodesRemoved       int      `json:"nodes_removed,omitempty"`
	LinksAdded         int      `json:"links_added,omitempty"`
	LinksRemoved       int      `json:"links_removed,omitempty"`
	// LFTEntriesChanged counts the LFT entries whose port the new route
	// set changes (of lft_entries); LFTBlocks the blocks sent for them.
	LFTEntriesChanged int `json:"lft_entries_changed,omitempty"`
	SL2VLSets         int `json:"sl2vl_sets,omitempty"`        // cut-node dependency blocks set and undone
	SL2VLReads        int `json:"sl2vl_reads,omitempty"`       // SLtoVL tables read back for blocks left by an earlier SM
	SL2VLRetries      int `json:"sl2vl_retries,omitempty"`     // lifting SLtoVL Sets sent again (a lost answer, another table shown)
	PortsDeactivated  int `json:"ports_deactivated,omitempty"` // by full deactivation or at cut nodes
	OwnTraps          int `json:"own_traps,omitempty"`         // switches whose traps the deactivation itself caused, taken back
	Waves             int `json:"waves,omitempty"`             // of the definitive distribution
}

// Phase is one phase of a sweep.
type Phase struct {
	Name     string  `json:"name"`
	Ms       float64 `json:"ms"`
	SMPs     uint64  `json:"smps"`
	Retries  uint64  `json:"retries,omitempty"`
	Timeouts uint64  `json:"timeouts,omitempty"`
	Errors   uint64  `json:"errors,omitempty"`
}

// Phase returns the named phase of r, and false when the sweep did not
// get to it.
func (r *Result) Phase(name string) (Phase, bool) {
	for _, p := range r.Phases {
		if p.Name == name {
			return p, true
		}
	}
	return Phase{}, false
}
