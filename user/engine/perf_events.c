// SPDX-License-Identifier: MIT
/* Per-CPU or per-task perf events carrying a BPF program. A BPF program attached to an
 * event opened with `inherit` runs for the event's inherited copies too: a thread or process
 * the task creates after the attach is sampled, and so is what it creates in turn. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "engine/perf_events.h"
#include "lib/util.h"

/* Listings of a process's threads before new threads are taken to be a storm that will
 * not settle (each pass opens events for the threads it found new). */
#define MAX_PASSES 64

void perf_events_why(char *why, size_t why_size, const char *what, int err)
{
	if (err == -EPERM || err == -EACCES)
		snprintf(why, why_size,
			 "%s: permission denied (run as root, or grant CAP_BPF, CAP_PERFMON and "
			 "CAP_SYS_PTRACE)",
			 what);
	else
		snprintf(why, why_size, "%s: %s", what, strerror(-err));
}

/* Open one event (pid, cpu) and attach prog. 0, -ESRCH/-ENODEV (no such task or CPU now:
 * not an error for the caller), or a negative errno with `why` set. */
static int open_one(struct perf_events *pe, const struct perf_event_attr *attr, pid_t pid, int cpu,
		    struct bpf_program *prog, uint64_t cookie, char *why, size_t why_size)
{
	LIBBPF_OPTS(bpf_link_create_opts, o, .perf_event.bpf_cookie = cookie);
	int fd, link_fd, err;

	fd = syscall(__NR_perf_event_open, attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		if (err == -ESRCH || err == -ENODEV)
			return err;
		perf_events_why(why, why_size, "cannot open perf events", err);
		return err;
	}
	err = grow_array((void **)&pe->ev, &pe->cap, pe->n + 1, sizeof(*pe->ev));
	if (err) {
		close(fd);
		perf_events_why(why, why_size, "cannot open perf events", err);
		return err;
	}
	/* a link of our own, not libbpf's attach: that one enables the event, and an event
	 * opened disabled must stay so until perf_events__enable */
	link_fd = bpf_link_create(bpf_program__fd(prog), fd, BPF_PERF_EVENT, &o);
	if (link_fd < 0) {
		err = -errno;
		close(fd);
		perf_events_why(why, why_size, "cannot attach to perf events", err);
		return err;
	}
	pe->ev[pe->n++] = (struct perf_event_link){ .fd = fd, .link_fd = link_fd };
	return 0;
}

int perf_events__open_cpus(struct perf_events *pe, const struct perf_event_attr *attr, int ncpus,
			   struct bpf_program *prog, uint64_t cookie, char *why, size_t why_size)
{
	for (int cpu = 0; cpu < ncpus; cpu++) {
		int err = open_one(pe, attr, -1, cpu, prog, cookie, why, why_size);

		if (err == -ENODEV)
			continue; /* possible but offline CPU */
		if (err)
			return err;
	}
	return 0;
}

struct tid_set {
	pid_t *tids;
	size_t n, cap;
};

static bool tid_seen(const struct tid_set *s, pid_t tid)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->tids[i] == tid)
			return true;
	return false;
}

/* Add the threads of `pid` not in `seen` to `fresh`. 0, or a negative errno (-ESRCH: the
 * process is gone). */
static int list_new_threads(pid_t pid, const struct tid_set *seen, struct tid_set *fresh)
{
	char path[64];
	struct dirent *de;
	DIR *dir;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return errno == ENOENT ? -ESRCH : -errno;
	while (!err && (de = readdir(dir))) {
		pid_t tid = (pid_t)strtol(de->d_name, NULL, 10);

		if (tid <= 0 || tid_seen(seen, tid) || tid_seen(fresh, tid))
			continue;
		err = grow_array((void **)&fresh->tids, &fresh->cap, fresh->n + 1,
				 sizeof(*fresh->tids));
		if (!err)
			fresh->tids[fresh->n++] = tid;
	}
	closedir(dir);
	return err;
}

int perf_events__open_tasks(struct perf_events *pe, const struct perf_event_attr *attr,
			    const pid_t *pids, size_t npids, size_t max_tasks,
			    struct bpf_program *prog, uint64_t cookie, char *why, size_t why_size)
{
	struct perf_event_attr a = *attr;
	struct tid_set seen = { 0 }, fresh = { 0 };
	int err = 0;

	/* threads and processes the task creates from now on carry the event */
	a.inherit = 1;
	/* off until the targets' configs are in place (perf_events__enable): a sample before
	 * that would count as "not a target process" */
	a.disabled = 1;
	/* A thread created by one whose event is open inherits it; one created before that,
	 * after the listing, did not, and shows in the next listing. */
	for (int pass = 0; !err && pass < MAX_PASSES; pass++) {
		fresh.n = 0;
		for (size_t i = 0; !err && i < npids; i++) {
			err = list_new_threads(pids[i], &seen, &fresh);
			if (err == -ESRCH)
				err = 0; /* gone: discovery says so */
		}
		if (err) {
			perf_events_why(why, why_size, "cannot list the threads to sample", err);
			break;
		}
		if (!fresh.n)
			break;
		if (seen.n + fresh.n > max_tasks) {
			err = -E2BIG;
			break;
		}
		for (size_t i = 0; !err && i < fresh.n; i++) {
			err = open_one(pe, &a, fresh.tids[i], -1, prog, cookie, why, why_size);
			if (err == -ESRCH)
				err = 0; /* ended since the listing */
		}
		if (!err)
			err = grow_array((void **)&seen.tids, &seen.cap, seen.n + fresh.n,
					 sizeof(*seen.tids));
		if (!err) {
			memcpy(seen.tids + seen.n, fresh.tids, fresh.n * sizeof(*fresh.tids));
			seen.n += fresh.n;
		}
	}
	pe->tasks = err ? 0 : seen.n;
	free(seen.tids);
	free(fresh.tids);
	if (err)
		perf_events__close(pe);
	return err;
}

int perf_events__enable(struct perf_events *pe)
{
	/* enabling an event enables the copies its task's children inherited meanwhile */
	for (size_t i = 0; i < pe->n; i++)
		if (ioctl(pe->ev[i].fd, PERF_EVENT_IOC_ENABLE, 0) && errno != ESRCH)
			return -errno;
	return 0;
}

void perf_events__close(struct perf_events *pe)
{
	for (size_t i = 0; i < pe->n; i++) {
		close(pe->ev[i].link_fd);
		close(pe->ev[i].fd);
	}
	pe->n = 0;
	pe->tasks = 0;
}

void perf_events__free(struct perf_events *pe)
{
	perf_events__close(pe);
	free(pe->ev);
	memset(pe, 0, sizeof(*pe));
}
