// SPDX-License-Identifier: MIT
/* libbpf skeleton wiring: the sampler's perf events (per CPU, or per thread of the targets),
 * the ring buffer consumer and the maps userspace writes (procs) or reads (outcomes). */
#include <errno.h>
#include <stdbool.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "engine/loader.h"
#include "engine/perf_events.h"
#include "lib/util.h"
#include "pywalk.skel.h"

struct loader {
	struct pywalk_bpf *skel;
	struct perf_events sampler;
	int ncpus;
	struct ring_buffer *rb;
	struct loader_opts opts;
	struct bpf_link **probe_links; /* trace's probes */
	size_t nprobe_links, probe_links_cap;
	struct perf_events probe_events; /* trace's software and hardware events */
};

static int handle_event(void *ctx, void *data, size_t size)
{
	struct loader *ld = ctx;

	return ld->opts.on_record(ld->opts.ctx, data, size);
}

static int perf_attr_for(const char *event, uint32_t freq, struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->freq = 1;
	attr->sample_freq = freq;
	if (!event || !strcmp(event, "cpu-clock")) {
		attr->type = PERF_TYPE_SOFTWARE;
		attr->config = PERF_COUNT_SW_CPU_CLOCK;
	} else if (!strcmp(event, "task-clock")) {
		attr->type = PERF_TYPE_SOFTWARE;
		attr->config = PERF_COUNT_SW_TASK_CLOCK;
	} else if (!strcmp(event, "cycles")) {
		attr->type = PERF_TYPE_HARDWARE;
		attr->config = PERF_COUNT_HW_CPU_CYCLES;
	} else {
		return -EINVAL;
	}
	return 0;
}

static void set_why(char *why, size_t why_size, const char *what, int err)
{
	perf_events_why(why, why_size, what, err);
}

/* --aggregate's maps: sized as asked, or to nothing when off (a counts map is
 * preallocated). The seed keeps a target from choosing frames that share a hash. */
static void set_aggregate(struct loader *ld, const struct loader_opts *opts)
{
	uint32_t n = !opts->aggregate	       ? 1
		     : opts->aggregate_entries ? opts->aggregate_entries
					       : PW_AGG_DEFAULT_ENTRIES;
	uint64_t seed = 0;

	ld->skel->rodata->aggregate = opts->aggregate;
	if (opts->aggregate && getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = now_ns() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
	ld->skel->rodata->agg_seed = seed;
	bpf_map__set_max_entries(ld->skel->maps.agg_counts_0, n);
	bpf_map__set_max_entries(ld->skel->maps.agg_counts_1, n);
	bpf_map__set_max_entries(ld->skel->maps.agg_frames_0, n);
	bpf_map__set_max_entries(ld->skel->maps.agg_frames_1, n);
}

struct loader *loader__open(const struct loader_opts *opts, char *why, size_t why_size)
{
	struct perf_event_attr attr;
	struct loader *ld;
	int err, ncpus;

	ld = calloc(1, sizeof(*ld));
	if (!ld) {
		errno = ENOMEM;
		return NULL;
	}
	ld->opts = *opts;
	err = perf_attr_for(opts->event, opts->frequency_hz, &attr);
	if (err) {
		snprintf(why, why_size, "unknown event '%s' (use cpu-clock, task-clock or cycles)",
			 opts->event);
		goto fail;
	}
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0) {
		err = ncpus ? ncpus : -EINVAL;
		set_why(why, why_size, "cannot count CPUs", err);
		goto fail;
	}
	ld->ncpus = ncpus;

	ld->skel = pywalk_bpf__open();
	if (!ld->skel) {
		err = -errno;
		set_why(why, why_size, "cannot open the BPF object", err);
		goto fail;
	}
	ld->skel->rodata->max_depth = opts->max_depth;
	ld->skel->rodata->follow_all = opts->follow_all;
	ld->skel->rodata->capture_code = !opts->no_code_records;
	ld->skel->rodata->print_args = opts->print_args;
	ld->skel->rodata->gil_wanted = opts->gil;
	ld->skel->rodata->kernel_stacks = opts->kernel_stacks;
	ld->skel->rodata->native_stack = opts->native_stack != 0;
	if (opts->native_stack)
		ld->skel->rodata->native_stack_bytes = opts->native_stack;
	bpf_map__set_max_entries(ld->skel->maps.scratch, ncpus);
	/* 64 KiB a CPU, only when stacks are copied */
	bpf_map__set_max_entries(ld->skel->maps.ustack_scratch, opts->native_stack ? ncpus : 1);
	if (opts->ring_bytes)
		bpf_map__set_max_entries(ld->skel->maps.events, opts->ring_bytes);
	/* only the programs this run can attach are loaded: the kernel verifies each at load,
	 * and all of that is start-up time */
	if (!opts->no_sampler) {
		struct bpf_program *probes[] = {
			ld->skel->progs.on_uprobe,    ld->skel->progs.on_uretprobe,
			ld->skel->progs.on_usdt,      ld->skel->progs.on_tracepoint,
			ld->skel->progs.on_sys_enter, ld->skel->progs.on_sys_exit,
		};

		for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
			bpf_program__set_autoload(probes[i], false);
	}
	/* every context switch of the host runs it: only when off-CPU time is asked for */
	bpf_program__set_autoload(ld->skel->progs.on_switch, opts->mode != LOADER_ON_CPU);
	ld->skel->rodata->offcpu_on = opts->mode != LOADER_ON_CPU;
	/* with --min-block, waits inside system calls are walked at the call's exit */
	bpf_program__set_autoload(ld->skel->progs.on_offcpu_sys_exit,
				  opts->mode != LOADER_ON_CPU && opts->min_block_ns);
	ld->skel->rodata->offcpu_min_block_ns = opts->min_block_ns;
	ld->skel->rodata->offcpu_wall = opts->mode == LOADER_WALL;
	/* trace's syscall probes attach only when asked: on every syscall of the host
	 * otherwise (the other probe programs have no target to auto-attach to) */
	bpf_program__set_autoattach(ld->skel->progs.on_sys_enter, false);
	bpf_program__set_autoattach(ld->skel->progs.on_sys_exit, false);
	ld->skel->rodata->latency_probes = opts->latency_probes;
	ld->skel->rodata->filter_probes = opts->filter_probes;
	set_aggregate(ld, opts);
	bpf_map__set_max_entries(ld->skel->maps.procs, opts->max_procs ? opts->max_procs : 4096);
	/* family is not used with follow_all (every process is followed): one entry, not
	 * half a MiB of preallocated kernel memory */
	bpf_map__set_max_entries(ld->skel->maps.family, opts->follow_all  ? 1
							: opts->max_procs ? opts->max_procs
									  : 4096);
	ld->skel->rodata->async_wanted = opts->async;
	bpf_map__set_max_entries(ld->skel->maps.async_procs, !opts->async      ? 1
							     : opts->max_procs ? opts->max_procs
									       : 4096);
	err = pywalk_bpf__load(ld->skel);
	if (err) {
		set_why(why, why_size,
			"cannot load the BPF program (needs a kernel with BTF, "
			"bpf_loop and ring buffers: Linux 5.17+)",
			err);
		goto fail;
	}

	if (opts->mode != LOADER_OFF_CPU && !opts->no_sampler) {
		err = -E2BIG;
		/* only the targets' threads take the sampling interrupt, unless they are many */
		if (opts->ntask_pids)
			err = perf_events__open_tasks(&ld->sampler, &attr, opts->task_pids,
						      opts->ntask_pids, PERF_EVENTS_MAX_TASKS,
						      ld->skel->progs.on_perf_event, 0, why,
						      why_size);
		if (err == -E2BIG)
			err = perf_events__open_cpus(&ld->sampler, &attr, ncpus,
						     ld->skel->progs.on_perf_event, 0, why,
						     why_size);
		if (err == -ENOENT || err == -EOPNOTSUPP)
			snprintf(why, why_size,
				 "perf event '%s' is not available on this machine "
				 "(try --event cpu-clock)",
				 opts->event ? opts->event : "cpu-clock");
		if (err)
			goto fail;
	}
	/* fork, exec and exit: attached before any process is added, so none is missed */
	err = pywalk_bpf__attach(ld->skel);
	if (err) {
		set_why(why, why_size,
			"cannot attach to the sched_process tracepoints (needs BTF tracepoints, "
			"Linux 5.5+)",
			err);
		goto fail;
	}
	ld->rb = ring_buffer__new(bpf_map__fd(ld->skel->maps.events), handle_event, ld, NULL);
	if (!ld->rb) {
		err = -errno;
		set_why(why, why_size, "cannot set up the ring buffer", err);
		goto fail;
	}
	return ld;
fail:
	loader__free(ld);
	errno = -err;
	return NULL;
}

void loader__stop(struct loader *ld)
{
	if (ld->skel && ld->skel->links.on_switch) {
		bpf_link__destroy(ld->skel->links.on_switch);
		ld->skel->links.on_switch = NULL;
	}
	if (ld->skel && ld->skel->links.on_offcpu_sys_exit) {
		bpf_link__destroy(ld->skel->links.on_offcpu_sys_exit);
		ld->skel->links.on_offcpu_sys_exit = NULL;
	}
	for (size_t i = 0; i < ld->nprobe_links; i++)
		bpf_link__destroy(ld->probe_links[i]);
	ld->nprobe_links = 0;
	perf_events__close(&ld->probe_events);
	perf_events__close(&ld->sampler);
}

void loader__free(struct loader *ld)
{
	if (!ld)
		return;
	ring_buffer__free(ld->rb);
	loader__stop(ld);
	perf_events__free(&ld->sampler);
	perf_events__free(&ld->probe_events);
	free(ld->probe_links);
	pywalk_bpf__destroy(ld->skel);
	free(ld);
}

/* Mark `tgid` in the program's target bitmap: before its config is inserted, or its
 * samples would be counted as not a target. */
void loader_mark_target(__u64 *bits, __u32 tgid)
{
	__atomic_fetch_or(&bits[PW_TARGET_WORD(tgid)], PW_TARGET_BIT(tgid), __ATOMIC_SEQ_CST);
}

int loader__add_process(struct loader *ld, pid_t pid, const struct pw_proc *cfg)
{
	__u32 key = (__u32)pid;

	loader_mark_target(ld->skel->bss->target_bits, key);
	if (bpf_map__update_elem(ld->skel->maps.procs, &key, sizeof(key), cfg, sizeof(*cfg),
				 BPF_ANY))
		return errno == ENOSPC ? -E2BIG : -errno;
	return 0;
}

int loader__remove_process(struct loader *ld, pid_t pid, uint32_t target)
{
	__u32 key = (__u32)pid;
	struct pw_proc cfg;

	if (target &&
	    (bpf_map__lookup_elem(ld->skel->maps.procs, &key, sizeof(key), &cfg, sizeof(cfg), 0) ||
	     cfg.target != target))
		return 0; /* gone already, or another lifetime of the PID: not ours */
	if (bpf_map__delete_elem(ld->skel->maps.procs, &key, sizeof(key), 0) && errno != ENOENT)
		return -errno;
	/* --async: its table goes with it (a stale one would name another lifetime anyway) */
	if (ld->skel->rodata->async_wanted &&
	    bpf_map__delete_elem(ld->skel->maps.async_procs, &key, sizeof(key), 0) &&
	    errno != ENOENT)
		return -errno;
	return 0;
}

int loader__set_async(struct loader *ld, pid_t pid, const struct pw_async_off *o)
{
	__u32 key = (__u32)pid;

	if (bpf_map__update_elem(ld->skel->maps.async_procs, &key, sizeof(key), o, sizeof(*o),
				 BPF_ANY))
		return errno == ENOSPC ? -E2BIG : -errno;
	return 0;
}

/* struct pw_switched_out of the BPF side, which defines it */
struct switched_out_value {
	uint64_t time_ns;
	uint32_t target, block;
	uint64_t owed_ns;
	int64_t syscall;
	uint32_t flags, pad;
};
#define SWITCHED_OUT_HELD 1 /* PW_SW_HELD */

int loader__mark_switched_out(struct loader *ld, pid_t tid, uint32_t target, uint64_t time_ns,
			      uint32_t block)
{
	__u32 key = (__u32)tid;
	struct switched_out_value v = {
		.time_ns = time_ns, .target = target, .block = block, .flags = SWITCHED_OUT_HELD
	};

	if (bpf_map__update_elem(ld->skel->maps.switched_out, &key, sizeof(key), &v, sizeof(v),
				 BPF_NOEXIST))
		return -errno;
	return 0;
}

void loader__foreach_switched_out(struct loader *ld,
				  void (*cb)(void *ctx, pid_t tid, uint32_t target,
					     uint64_t time_ns, uint64_t owed_ns, bool held),
				  void *ctx)
{
	__u32 key, next, *prev = NULL;
	struct switched_out_value v;

	while (!bpf_map__get_next_key(ld->skel->maps.switched_out, prev, &next, sizeof(next))) {
		key = next;
		prev = &key;
		if (bpf_map__lookup_elem(ld->skel->maps.switched_out, &key, sizeof(key), &v,
					 sizeof(v), 0))
			continue;
		cb(ctx, (pid_t)key, v.target, v.time_ns, v.owed_ns, v.flags & SWITCHED_OUT_HELD);
	}
}

void loader__unmark_switched_out(struct loader *ld, pid_t tid, uint64_t time_ns)
{
	__u32 key = (__u32)tid;
	struct switched_out_value v;

	if (!bpf_map__lookup_elem(ld->skel->maps.switched_out, &key, sizeof(key), &v, sizeof(v),
				  0) &&
	    v.time_ns == time_ns)
		bpf_map__delete_elem(ld->skel->maps.switched_out, &key, sizeof(key), 0);
}

int loader__follow(struct loader *ld, pid_t pid, bool children)
{
	__u32 key = (__u32)pid;
	__u8 how = children ? PW_FOLLOW_CHILDREN : PW_FOLLOW_EXEC;

	if (bpf_map__update_elem(ld->skel->maps.family, &key, sizeof(key), &how, sizeof(how),
				 BPF_ANY))
		return -errno;
	return 0;
}

int loader__start_sampler(struct loader *ld)
{
	return ld->sampler.tasks ? perf_events__enable(&ld->sampler) : 0;
}

size_t loader__sampled_tasks(const struct loader *ld)
{
	return ld->sampler.tasks;
}

int loader__poll(struct loader *ld, int timeout_ms)
{
	int n = ring_buffer__poll(ld->rb, timeout_ms), m;

	if (n == -EINTR)
		n = 0;
	if (n < 0)
		return n;
	/* the program wakes us at most every 100 ms per CPU: take what came in quietly too */
	m = ring_buffer__consume(ld->rb);
	return m < 0 ? m : n + m;
}

int loader__drain(struct loader *ld)
{
	return ring_buffer__consume(ld->rb);
}

static int read_outcomes_once(struct loader *ld, uint32_t probe, uint64_t counts[PW_OUT__COUNT],
			      uint64_t *runs);

int loader__read_outcomes(struct loader *ld, uint64_t counts[PW_OUT__COUNT], uint64_t *runs)
{
	return loader__read_probe_outcomes(ld, 0, counts, runs);
}

int loader__read_probe_outcomes(struct loader *ld, uint32_t probe, uint64_t counts[PW_OUT__COUNT],
				uint64_t *runs)
{
	/* a run still in flight on another CPU (detaching waits for no one) can have counted
	 * itself but not yet its outcome; after loader__stop the two settle within moments */
	for (int tries = 0;; tries++) {
		uint64_t sum = 0;
		int err = read_outcomes_once(ld, probe, counts, runs);

		if (err)
			return err;
		for (int i = 0; i < PW_OUT__COUNT; i++)
			sum += counts[i];
		if (sum == *runs || tries >= 100)
			return 0;
		usleep(1000);
	}
}

/* Sum slot k of the per-CPU counter array over CPUs. */
static int read_slot(struct loader *ld, __u32 k, uint64_t *vals, int ncpus, uint64_t *sum)
{
	if (bpf_map__lookup_elem(ld->skel->maps.outcomes, &k, sizeof(k), vals,
				 ncpus * sizeof(*vals), 0))
		return -errno;
	*sum = 0;
	for (int c = 0; c < ncpus; c++)
		*sum += vals[c];
	return 0;
}

static int read_slots(struct loader *ld, __u32 first, __u32 n, uint64_t *out)
{
	int ncpus = libbpf_num_possible_cpus(), err = 0;
	uint64_t *vals;

	vals = calloc(ncpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (__u32 k = 0; k < n && !err; k++)
		err = read_slot(ld, first + k, vals, ncpus, &out[k]);
	free(vals);
	return err;
}

static int read_outcomes_once(struct loader *ld, uint32_t probe, uint64_t counts[PW_OUT__COUNT],
			      uint64_t *runs)
{
	int err = read_slots(ld, PW_SLOT(probe, 0), PW_OUT__COUNT, counts);

	return err ? err : read_slots(ld, PW_SLOT(probe, PW_COUNTER_INDEX(PW_CNT_RUNS)), 1, runs);
}

int loader__read_counters(struct loader *ld, uint64_t counters[PW_CNT__COUNT])
{
	return read_slots(ld, PW_COUNTER_INDEX(0), PW_CNT__COUNT, counters);
}

int loader__read_probe_counters(struct loader *ld, uint32_t probe, uint64_t counters[PW_CNT__COUNT])
{
	if (probe >= PW_MAX_PROBES)
		return -EINVAL;
	return read_slots(ld, PW_SLOT(probe, PW_COUNTER_INDEX(0)), PW_CNT__COUNT, counters);
}

/* ---- trace --aggregate ------------------------------------------------------------------ */

int loader__agg_flip(struct loader *ld, uint32_t *old)
{
	__u32 slot, fd;

	*old = ld->skel->bss->agg_gen;
	__atomic_store_n(&ld->skel->bss->agg_gen, *old + 1, __ATOMIC_SEQ_CST);
	/* writing a map-in-map slot makes the kernel wait for every program running (an RCU
	 * grace period) before it returns: rewriting one with the map it holds is the wait */
	slot = *old & 1;
	fd = (__u32)bpf_map__fd(slot ? ld->skel->maps.agg_counts_1 : ld->skel->maps.agg_counts_0);
	if (bpf_map__update_elem(ld->skel->maps.agg_counts, &slot, sizeof(slot), &fd, sizeof(fd),
				 BPF_ANY))
		return -errno;
	return 0;
}

/* Every key of `map` removed; `value_size` bytes of scratch per key for the batch. */
static int agg_take_map(struct bpf_map *map, size_t value_size,
			int (*cb)(void *ctx, const struct pw_agg_key *k,
				  const struct pw_agg_val *v),
			void *ctx)
{
	size_t key_size = bpf_map__key_size(map), cap = 256;
	int fd = bpf_map__fd(map), err = 0;
	void *keys = NULL, *values = NULL;
	__u64 batch = 0;
	bool first = true, done = false;

	while (!done && !err) {
		__u32 n = (__u32)cap;

		if (!keys) {
			keys = calloc(cap, key_size);
			values = calloc(cap, value_size);
			if (!keys || !values) {
				err = -ENOMEM;
				break;
			}
		}
		err = bpf_map_lookup_and_delete_batch(fd, first ? NULL : &batch, &batch, keys,
						      values, &n, NULL);
		if (err && errno == ENOSPC && n == 0) {
			/* one bucket holds more keys than the buffer: a bigger one */
			free(keys);
			free(values);
			keys = values = NULL;
			cap *= 4;
			err = 0;
			continue;
		}
		if (err && errno != ENOENT) {
			err = -errno;
			break;
		}
		done = err != 0; /* ENOENT: that was the last of them */
		err = 0;
		first = false;
		for (__u32 i = 0; cb && i < n && !err; i++)
			err = cb(ctx, (const struct pw_agg_key *)((char *)keys + i * key_size),
				 (const struct pw_agg_val *)((char *)values + i * value_size));
	}
	free(keys);
	free(values);
	return err;
}

int loader__agg_take(struct loader *ld, uint32_t gen,
		     int (*cb)(void *ctx, const struct pw_agg_key *k, const struct pw_agg_val *v),
		     void *ctx)
{
	bool one = gen & 1;
	int err = agg_take_map(one ? ld->skel->maps.agg_counts_1 : ld->skel->maps.agg_counts_0,
			       sizeof(struct pw_agg_val), cb, ctx);

	if (!err)
		err = agg_take_map(one ? ld->skel->maps.agg_frames_1 : ld->skel->maps.agg_frames_0,
				   sizeof(struct pw_agg_frames), NULL, NULL);
	return err;
}

/* ---- trace's probes -------------------------------------------------------------------- */

/* Keep `link` for loader__stop; a NULL link is the attach's failure (errno). */
static int keep_link(struct loader *ld, struct bpf_link *link, const char *what, char *why,
		     size_t why_size)
{
	int err;

	if (!link) {
		err = -errno;
		set_why(why, why_size, what, err);
		return err;
	}
	if (grow_array((void **)&ld->probe_links, &ld->probe_links_cap, ld->nprobe_links + 1,
		       sizeof(*ld->probe_links))) {
		bpf_link__destroy(link);
		set_why(why, why_size, what, -ENOMEM);
		return -ENOMEM;
	}
	ld->probe_links[ld->nprobe_links++] = link;
	return 0;
}

int loader__attach_tracepoint(struct loader *ld, const char *cat, const char *name, uint64_t cookie,
			      char *why, size_t why_size)
{
	LIBBPF_OPTS(bpf_tracepoint_opts, o, .bpf_cookie = cookie);
	char what[600];

	snprintf(what, sizeof(what), "cannot attach to tracepoint %s:%s", cat, name);
	return keep_link(
		ld,
		bpf_program__attach_tracepoint_opts(ld->skel->progs.on_tracepoint, cat, name, &o),
		what, why, why_size);
}

int loader__attach_uprobe(struct loader *ld, const char *path, uint64_t offset, bool ret,
			  uint64_t cookie, char *why, size_t why_size)
{
	LIBBPF_OPTS(bpf_uprobe_opts, o, .bpf_cookie = cookie, .retprobe = ret);

	/* every process that runs the file: the program tells targets from the rest */
	return keep_link(ld,
			 bpf_program__attach_uprobe_opts(ret ? ld->skel->progs.on_uretprobe
							     : ld->skel->progs.on_uprobe,
							 -1, path, offset, &o),
			 ret ? "cannot attach the uretprobe" : "cannot attach the uprobe", why,
			 why_size);
}

int loader__attach_usdt(struct loader *ld, const char *path, const char *provider, const char *name,
			uint64_t cookie, char *why, size_t why_size)
{
	LIBBPF_OPTS(bpf_usdt_opts, o, .usdt_cookie = cookie);

	return keep_link(
		ld, bpf_program__attach_usdt(ld->skel->progs.on_usdt, -1, path, provider, name, &o),
		"cannot attach the USDT probe", why, why_size);
}

int loader__attach_kprobe(struct loader *ld, const char *func, uint64_t offset, bool ret,
			  uint64_t cookie, char *why, size_t why_size)
{
	LIBBPF_OPTS(bpf_kprobe_opts, o, .bpf_cookie = cookie, .offset = offset, .retprobe = ret);

	/* a uprobe program is a kprobe program to the kernel */
	return keep_link(ld, bpf_program__attach_kprobe_opts(ld->skel->progs.on_uprobe, func, &o),
			 "cannot attach the kprobe", why, why_size);
}

int loader__attach_perf(struct loader *ld, uint32_t type, uint64_t config, uint64_t period,
			bool freq, uint64_t cookie, char *why, size_t why_size)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr), .type = type, .config = config, .freq = freq
	};

	if (freq)
		attr.sample_freq = period;
	else
		attr.sample_period = period;
	/* on every CPU: an inherited copy of a per-task event may not carry the cookie that
	 * names the probe */
	return perf_events__open_cpus(&ld->probe_events, &attr, ld->ncpus,
				      ld->skel->progs.on_perf_event, cookie, why, why_size);
}

int loader__set_syscall(struct loader *ld, uint32_t nr, uint32_t value)
{
	if (bpf_map__update_elem(ld->skel->maps.syscall_probes, &nr, sizeof(nr), &value,
				 sizeof(value), BPF_ANY))
		return -errno;
	return 0;
}

int loader__attach_syscalls(struct loader *ld, bool enter, bool exit, char *why, size_t why_size)
{
	int err = 0;

	if (enter)
		err = keep_link(ld, bpf_program__attach(ld->skel->progs.on_sys_enter),
				"cannot attach to raw tracepoint sys_enter", why, why_size);
	if (!err && exit)
		err = keep_link(ld, bpf_program__attach(ld->skel->progs.on_sys_exit),
				"cannot attach to raw tracepoint sys_exit", why, why_size);
	return err;
}

int loader__set_filter(struct loader *ld, uint32_t probe, const struct pw_filter *f)
{
	if (bpf_map__update_elem(ld->skel->maps.filters, &probe, sizeof(probe), f, sizeof(*f),
				 BPF_ANY))
		return -errno;
	return 0;
}
