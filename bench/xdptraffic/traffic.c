//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// The bench's traffic in the kernel:
//
//   gen      the generator: run with BPF_PROG_RUN in live-frame mode on a
//            test port, it stamps its input frame (sequence number, and
//            in a latency trial kernel time, written into every frame,
//            since the kernel recycles its pages without rewriting them),
//            varies the UDP source port over `flows` values, and
//            transmits it (XDP_TX). Paced: a frame whose time has not
//            come is dropped unsent, so the kernel's loop waits in place;
//            frame n is due at start + n * interval. The clock is read
//            when the frames due at its last reading are out: a frame
//            sent without reading it was due then, so none goes early,
//            and a generator near its limit spends its time on frames.
//            A generator that was off its core for a while catches up by
//            sending back to back, for lags up to catch_up_ns (a
//            scheduler's time slice, set from Go's xdptraffic.CatchUp); a
//            longer one moves the schedule on to that lag, and shows in
//            the offered rate. It keeps the furthest lag it found. It
//            stops at `limit` frames and counts what it transmitted,
//            since a BPF_PROG_RUN's repeat count is only a minimum.
//   analyze  the analyzer, on the receiving test port: per stream, the
//            frames and bytes of the current trial, sequence gaps,
//            reordered and duplicated frames, and a latency histogram
//            from the stamps that carry a time. Every other frame passes
//            to the stack.
//
// The stamp is the bench's (bench/frame.go): at the start of the UDP
// payload of an untagged IPv4 frame, big-endian magic "NB", trial, seq,
// time, stream.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define MAX_STREAMS 64
#define SEQ_WINDOW 1024 /* frames back within which duplicates are told from reordering */
#define HIST_BUCKETS 256

#define STAMP_OFF 42
#define STAMP_MAGIC 0x4e42

struct stamp {
	__be16 magic;
	__be16 trial;
	__be32 seq;
	__be64 time;
	__be16 stream;
} __attribute__((packed));

/* gen_state: set by user space before a run, advanced by gen. */
struct gen_state {
	__u64 start_ns;    /* frame 0 is due (kernel monotonic clock) */
	__u64 interval_ps; /* between frames; 0 = as fast as possible */
	__u64 limit;       /* frames to send */
	__u64 stamp_time;  /* write the time into every frame (a latency trial) */
	__u64 next;        /* next sequence number = frames transmitted */
	__u64 clock_ps;    /* the clock's last reading, since start_ns */
	__u64 first_ns;    /* when frame 0 went */
	__u64 last_ns;     /* when the latest frame went (read at the last) */
	__u64 early;       /* runs that found no frame due (waiting) */
	__u64 slipped_ns;  /* how far the schedule was moved on, not caught up */
	__u64 slips;
	__u64 max_lag_ns;  /* the furthest behind the schedule a clock reading found it (exact with one_cpu, as the pacing is) */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gen_state);
} generator SEC(".maps");

const volatile __u32 flows = 1;      /* source ports cycled */
const volatile __u32 catch_up = 32;  /* frames a late generator always may send back to back */
const volatile __u64 catch_up_ns = 2000000; /* and the lag it catches up however many frames that is (set from xdptraffic.CatchUp) */
const volatile __u16 sport_base = 1024;
const volatile __u32 one_cpu = 0;   /* every run on one CPU: no atomic needed */

SEC("xdp")
int gen(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 zero = 0;
	struct gen_state *st = bpf_map_lookup_elem(&generator, &zero);
	struct stamp *s = data + STAMP_OFF;
	__be16 *sport = data + 34;
	if (!st || (void *)(s + 1) > end)
		return XDP_ABORTED;
	__u64 next = st->next;
	if (next >= st->limit)
		return XDP_DROP;
	__u64 interval = st->interval_ps;
	/* Time in picoseconds since start: a trial of days fits in 64 bits,
	 * and no division is needed to tell whether a frame is due. */
	__u64 due_ps = next * interval;
	__u64 now = 0;
	if (next == 0 || next + 1 == st->limit || st->stamp_time || due_ps > st->clock_ps) {
		now = bpf_ktime_get_ns();
		if (next == 0) {
			/* The schedule starts with the first frame: a late
			 * start caught up would send the trial a hair fast. */
			st->start_ns = now;
			st->first_ns = now;
		}
		st->last_ns = now;
		if (interval) {
			__u64 since = now > st->start_ns ? (now - st->start_ns) * 1000 : 0;
			if (since < due_ps) {
				st->early++;
				return XDP_DROP;
			}
			/* Late by more than catch_up_ns (the thread was off
			 * the CPU that long, or the core cannot keep the rate):
			 * move the schedule on to that lag rather than catch up
			 * in a burst the device under test would be right to
			 * drop. The offered rate shows the slip. A lag up to
			 * that is caught up: the frames go back to back, as
			 * fast as the port takes them, which on a wire is its
			 * line rate; they were due at this reading, so the
			 * clock is next read when they are out. */
			__u64 lag = since - due_ps;
			if (lag / 1000 > st->max_lag_ns)
				st->max_lag_ns = lag / 1000;
			__u64 keep = catch_up_ns * 1000;
			if (keep < catch_up * interval)
				keep = catch_up * interval;
			if (lag > keep) {
				__u64 shift = (lag - keep) / 1000;
				st->start_ns += shift;
				st->slipped_ns += shift;
				st->slips++;
				since -= shift * 1000;
			}
			st->clock_ps = since;
		}
	}
	if (one_cpu) {
		/* Runs on one CPU do not overlap: a batch of them runs with
		 * bottom halves off. */
		st->next = next + 1;
	} else {
		next = __sync_fetch_and_add(&st->next, 1);
		if (next >= st->limit)
			return XDP_DROP; /* another CPU took the last one */
	}
	s->seq = bpf_htonl((__u32)next);
	s->time = bpf_cpu_to_be64(st->stamp_time ? now : 0);
	if (flows > 1)
		*sport = bpf_htons(sport_base + (__u16)(next % flows));
	return XDP_TX;
}

/* Per CPU: the counts and the latency histogram. */
struct an_counts {
	__u64 frames;
	__u64 bytes;
	__u64 timed; /* frames with a time: those the latency is of */
	__u64 lat_sum;
	__u64 lat_min;
	__u64 lat_max;
	__u64 hist[HIST_BUCKETS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_STREAMS);
	__type(key, __u32);
	__type(value, struct an_counts);
} counts SEC(".maps");

/* Per stream, shared: what sequence numbers were seen. slot[seq %
 * SEQ_WINDOW] holds seq + 1 once seq arrived. Updated with atomic
 * operations, not a lock: a spin lock's interrupt save and restore cost
 * more than the rest of the analyzer in a guest. */
struct an_seq {
	__u64 high;       /* highest seq seen + 1 */
	__u64 reordered;  /* arrived after a later one */
	__u64 duplicated; /* arrived again */
	__u32 slot[SEQ_WINDOW];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_STREAMS);
	__type(key, __u32);
	__type(value, struct an_seq);
} seqs SEC(".maps");

/* The trial counted; frames of others (late ones of an earlier trial) are
 * counted apart. */
struct an_config {
	__u32 trial;
	__u32 pad;
	__u64 other; /* stamped frames of another trial */
	__u64 passed; /* frames that were not test frames */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct an_config);
} analyzer SEC(".maps");

/* bucket: four per power of two of the latency in ns. */
static __always_inline __u32 bucket(__u64 ns)
{
	if (ns < 4)
		return (__u32)ns;
	__u32 msb = 0;
	__u64 v = ns;
	if (v >> 32) { msb += 32; v >>= 32; }
	if (v >> 16) { msb += 16; v >>= 16; }
	if (v >> 8) { msb += 8; v >>= 8; }
	if (v >> 4) { msb += 4; v >>= 4; }
	if (v >> 2) { msb += 2; v >>= 2; }
	if (v >> 1) { msb += 1; }
	__u32 b = msb * 4 + (__u32)((ns >> (msb - 2)) & 3);
	return b < HIST_BUCKETS ? b : HIST_BUCKETS - 1;
}

/* Frags-aware, so that a veth whose peer has a jumbo MTU runs it natively. */
SEC("xdp.frags")
int analyze(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 zero = 0;
	struct an_config *cfg = bpf_map_lookup_elem(&analyzer, &zero);
	struct ethhdr *eth = data;
	struct stamp *s = data + STAMP_OFF;
	__u8 *ip = data + sizeof(*eth);
	if (!cfg)
		return XDP_ABORTED;
	if ((void *)(s + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) || ip[0] != 0x45 || ip[9] != 17 ||
	    s->magic != bpf_htons(STAMP_MAGIC)) {
		__sync_fetch_and_add(&cfg->passed, 1);
		return XDP_PASS;
	}
	if (bpf_ntohs(s->trial) != cfg->trial) {
		__sync_fetch_and_add(&cfg->other, 1);
		return XDP_DROP;
	}
	__u32 stream = bpf_ntohs(s->stream);
	struct an_counts *c = bpf_map_lookup_elem(&counts, &stream);
	struct an_seq *q = bpf_map_lookup_elem(&seqs, &stream);
	if (!c || !q) {
		__sync_fetch_and_add(&cfg->other, 1);
		return XDP_DROP;
	}
	c->frames++;
	c->bytes += (__u64)(end - data);
	/* A throughput trial's frames carry no time: the clock is not read
	 * for them on either end. */
	__u64 sent = bpf_be64_to_cpu(s->time);
	if (sent) {
		__u64 now = bpf_ktime_get_ns();
		__u64 lat = now > sent ? now - sent : 0;
		c->timed++;
		c->lat_sum += lat;
		if (c->lat_min == 0 || lat < c->lat_min)
			c->lat_min = lat;
		if (lat > c->lat_max)
			c->lat_max = lat;
		__u32 b = bucket(lat);
		if (b < HIST_BUCKETS)
			c->hist[b]++;
	}

	__u32 seq = bpf_ntohl(s->seq);
	__u32 i = seq % SEQ_WINDOW;
	__u32 was = __sync_lock_test_and_set(&q->slot[i], seq + 1);
	if (was == seq + 1) {
		__sync_fetch_and_add(&q->duplicated, 1);
		return XDP_DROP;
	}
	/* Raise high to seq + 1 unless another CPU raised it past; a few
	 * tries, since each failure means high moved on. */
	__u64 h = q->high;
	for (int try = 0; try < 4 && (__u64)seq >= h; try++) {
		__u64 prev = __sync_val_compare_and_swap(&q->high, h, (__u64)seq + 1);
		if (prev == h)
			return XDP_DROP;
		h = prev;
	}
	if ((__u64)seq < h)
		__sync_fetch_and_add(&q->reordered, 1);
	return XDP_DROP;
}

char _license[] SEC("license") = "Dual BSD/GPL";
