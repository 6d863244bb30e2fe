// SPDX-License-Identifier: GPL-2.0 OR MIT
/* The floor under pywalk's per-sample cost: a perf-event program that makes only the
 * user-memory reads pywalk's walk makes for the same stack (same addresses, same sizes, in
 * the same order; pwbench records them), and nothing else: no pid lookup, no thread cache,
 * no checks, no bpf_loop, no ring buffer. pywalk's cost divided by this one is the price of
 * everything the walk does beyond reading. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "floor.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct floor_plan);
} plan SEC(".maps");

/* Where the reads land; shared by all CPUs, since nobody looks at what was read. */
__u8 buf[FLOOR_READ_MAX];

SEC("perf_event")
int floor_reads(struct bpf_perf_event_data *ctx __attribute__((unused)))
{
	struct floor_plan *p;
	__u32 zero = 0;

	p = bpf_map_lookup_elem(&plan, &zero);
	if (!p)
		return 0;
	/* a plain bounded loop: cheaper per iteration than bpf_loop's callback, so a floor */
	for (__u32 i = 0; i < FLOOR_MAX_READS; i++) {
		if (i >= p->n)
			break;
		bpf_probe_read_user(buf, (p->reads[i].size_m1 & (FLOOR_READ_MAX - 1)) + 1,
				    (const void *)(unsigned long)p->reads[i].addr);
	}
	return 0;
}

/* The cost of being sampled at all: a program that does nothing, attached (by `pwbench
 * hold`) to the same per-CPU perf events pywalk uses. */
SEC("perf_event")
int empty(struct bpf_perf_event_data *ctx __attribute__((unused)))
{
	return 0;
}
