//go:build ignore

// Fault injection on a soft-fabric port: a tc (TCX) program that drops,
// corrupts or delays the frames it sees that match the rules in its maps.
//
// Frames are Ethernet II carrying one IBA packet: EtherType 0x88B5 for data
// packets (LRH [GRH] BTH [DETH] payload ICRC VCRC), 0x88B6 for flow-control
// link packets. Each attachment loads its own copy of the program and maps,
// so rules and counters are per device and direction.
//
// Build: go generate (bpf2go); the objects are committed.

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define MAX_RULES 16
#define RATE_ONE 1000000 // rates are in parts per million

#define ETH_HLEN 14
#define ETH_P_IBA_DATA 0x88B5
#define ETH_P_IBA_LINK 0x88B6
#define LRH_SIZE 8
#define GRH_SIZE 40
#define LNH_LOCAL 2
#define LNH_GLOBAL 3
// BTH (12) + DETH (8) + the MAD header up to AttrID (18 bytes).
#define TRANSPORT_PEEK (12 + 8 + 18)

enum action {
	ACT_NONE = 0,
	ACT_DROP = 1,
	ACT_CORRUPT = 2,
	ACT_DELAY = 3,
};

// Match fields: a rule compares only the fields whose bit is set.
enum match_field {
	M_ETHERTYPE = 1 << 0,
	M_VL = 1 << 1,
	M_SL = 1 << 2,
	M_DLID = 1 << 3,
	M_SLID = 1 << 4,
	M_CLASS = 1 << 5,
	M_METHOD = 1 << 6,
	M_ATTR = 1 << 7,
};

// A rule; a slot whose action is ACT_NONE is free. The harness writes a
// whole rule at once and never edits one in place.
struct rule {
	__u32 fields; // enum match_field bits
	__u8 action;  // enum action
	__u8 vl;
	__u8 sl;
	__u8 mgmt_class;
	__u8 method; // the whole method byte, response bit included
	__u8 pad1;
	__u16 ethertype;
	__u16 dlid;
	__u16 slid;
	__u16 attr_id;
	__u16 pad2;
	__u32 rate;     // acts on this many matches per million
	__u64 delay_ns; // ACT_DELAY
	__u64 limit;    // acts at most this many times; 0: no limit
};

// A rule's counters. claimed counts the tries at the limit, so that acted
// never overshoots it when CPUs race.
struct rule_stats {
	__u64 matched;
	__u64 acted;
	__u64 claimed;
};

// The wire's order when delays are on: the departure time given to the
// last frame.
struct edt_state {
	__u64 last_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_RULES);
	__type(key, __u32);
	__type(value, struct rule);
} rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_RULES);
	__type(key, __u32);
	__type(value, struct rule_stats);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct edt_state);
} edt SEC(".maps");

// What the parser found in a frame; has says which fields are valid.
struct frame {
	__u32 has;
	__u16 ethertype;
	__u8 vl, sl;
	__u16 dlid, slid;
	__u8 mgmt_class, method;
	__u16 attr_id;
	__u32 corrupt_off; // byte whose bit 4 a corrupt rule flips
};

static __always_inline void parse(struct __sk_buff *skb, struct frame *f)
{
	__u8 b[TRANSPORT_PEEK];
	__u16 et;

	if (bpf_skb_load_bytes(skb, 12, &et, sizeof(et)) < 0)
		return;
	f->ethertype = bpf_ntohs(et);
	f->has = M_ETHERTYPE;
	f->corrupt_off = skb->len > 3 ? skb->len - 3 : 0;

	if (f->ethertype == ETH_P_IBA_LINK) {
		// Op|FCTBS (2 bytes), VL|FCCL (2 bytes), LPCRC (2 bytes).
		if (bpf_skb_load_bytes(skb, ETH_HLEN, b, 6) < 0)
			return;
		f->vl = b[2] >> 4;
		f->has |= M_VL;
		f->corrupt_off = ETH_HLEN + 4; // the LPCRC
		return;
	}
	if (f->ethertype != ETH_P_IBA_DATA)
		return;
	if (bpf_skb_load_bytes(skb, ETH_HLEN, b, LRH_SIZE) < 0)
		return;
	f->vl = b[0] >> 4;
	f->sl = b[1] >> 4;
	f->dlid = (__u16)b[2] << 8 | b[3];
	f->slid = (__u16)b[6] << 8 | b[7];
	f->has |= M_VL | M_SL | M_DLID | M_SLID;
	// PktLen counts words through the ICRC: flip the byte before it, which
	// both the ICRC and the VCRC cover, and leave the lengths intact.
	__u32 pktlen = ((__u32)(b[4] & 0x07) << 8 | b[5]) * 4;
	if (pktlen >= LRH_SIZE + 5 && ETH_HLEN + pktlen + 2 <= skb->len)
		f->corrupt_off = ETH_HLEN + pktlen - 5;

	__u8 lnh = b[1] & 0x03;
	__u32 off = ETH_HLEN + LRH_SIZE;
	if (lnh == LNH_GLOBAL)
		off += GRH_SIZE;
	else if (lnh != LNH_LOCAL)
		return;
	if (bpf_skb_load_bytes(skb, off, b, TRANSPORT_PEEK) < 0)
		return;
	// DestQP: the low 24 bits of BTH bytes 4-7. MADs go to QP0 and QP1.
	__u32 qp = (__u32)b[5] << 16 | (__u32)b[6] << 8 | b[7];
	if (qp > 1)
		return;
	__u8 *mad = b + 20;
	f->mgmt_class = mad[1];
	f->method = mad[3];
	f->attr_id = (__u16)mad[16] << 8 | mad[17];
	f->has |= M_CLASS | M_METHOD | M_ATTR;
}

static __always_inline int matches(const struct rule *r, const struct frame *f)
{
	if ((r->fields & f->has) != r->fields)
		return 0; // a field the frame does not have
	if ((r->fields & M_ETHERTYPE) && r->ethertype != f->ethertype)
		return 0;
	if ((r->fields & M_VL) && r->vl != f->vl)
		return 0;
	if ((r->fields & M_SL) && r->sl != f->sl)
		return 0;
	if ((r->fields & M_DLID) && r->dlid != f->dlid)
		return 0;
	if ((r->fields & M_SLID) && r->slid != f->slid)
		return 0;
	if ((r->fields & M_CLASS) && r->mgmt_class != f->mgmt_class)
		return 0;
	if ((r->fields & M_METHOD) && r->method != f->method)
		return 0;
	if ((r->fields & M_ATTR) && r->attr_id != f->attr_id)
		return 0;
	return 1;
}

// acts decides whether a matching frame is acted on: the rate, then the
// limit.
static __always_inline int acts(const struct rule *r, struct rule_stats *s)
{
	if (r->rate < RATE_ONE && bpf_get_prandom_u32() % RATE_ONE >= r->rate)
		return 0;
	if (r->limit && __sync_fetch_and_add(&s->claimed, 1) >= r->limit)
		return 0;
	return 1;
}

SEC("tc")
int fault(struct __sk_buff *skb)
{
	struct frame f = {};
	__u64 delay = 0;
	int delaying = 0, corrupt = 0;

	parse(skb, &f);
	for (__u32 i = 0; i < MAX_RULES; i++) {
		__u32 k = i;
		struct rule *r = bpf_map_lookup_elem(&rules, &k);
		struct rule_stats *s = bpf_map_lookup_elem(&counters, &k);
		if (!r || !s || r->action == ACT_NONE)
			continue;
		if (r->action == ACT_DELAY)
			delaying = 1;
		if (!matches(r, &f))
			continue;
		__sync_fetch_and_add(&s->matched, 1);
		if (!acts(r, s))
			continue;
		__sync_fetch_and_add(&s->acted, 1);
		switch (r->action) {
		case ACT_DROP:
			return TC_ACT_SHOT;
		case ACT_CORRUPT:
			corrupt = 1;
			break;
		case ACT_DELAY:
			if (r->delay_ns > delay)
				delay = r->delay_ns;
			break;
		}
	}
	if (corrupt && f.corrupt_off) {
		__u8 v;
		if (bpf_skb_load_bytes(skb, f.corrupt_off, &v, 1) == 0) {
			v ^= 0x10;
			bpf_skb_store_bytes(skb, f.corrupt_off, &v, 1, 0);
		}
	}
	// Earliest departure time, never before the previous frame's: a link
	// does not reorder, so frames behind a delayed one wait for it (also
	// just after the last delay rule went). The fq qdisc on the device
	// holds each frame until then.
	__u32 k = 0;
	struct edt_state *e = bpf_map_lookup_elem(&edt, &k);
	if (e && (delaying || e->last_ns)) {
		__u64 now = bpf_ktime_get_ns();
		__u64 t = now + delay;
		if (t < e->last_ns)
			t = e->last_ns;
		if (t > now) {
			e->last_ns = t;
			bpf_skb_set_tstamp(skb, t, BPF_SKB_TSTAMP_DELIVERY_MONO);
		} else {
			e->last_ns = 0; // caught up: nothing to keep order with
		}
	}
	return TC_ACT_UNSPEC; // TCX_NEXT: let any later program decide
}

char __license[] SEC("license") = "Dual MIT/GPL";
