// SPDX-License-Identifier: MIT
/* Sinks: one thread each, a FIFO queue bounded in bytes, exponential backoff with jitter
 * between failed attempts. The item being delivered is never dropped from under its
 * thread; an overflowing queue drops the oldest of the others. At shutdown a sink keeps
 * delivering for its flush timeout, then counts what is left as dropped. What goes wrong
 * is logged once per change (failing, delivering again) or at most once a minute
 * (rejections, drops), never per attempt: a back end that is down for a day must not
 * fill the log. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/escape.h"
#include "agent/sink.h"
#include "lib/log.h"

#define WARN_EVERY_S 60.0

struct qnode {
	struct export_item *it;
	struct qnode *next;
};

struct sink {
	char name[64];
	const struct sink_ops *ops;
	void *ctx;
	struct sink_opts opts;

	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC */
	struct qnode *head, *tail;
	struct qnode *in_flight; /* the head while its delivery runs unlocked */
	bool stopping;
	bool joined;	/* its thread has ended */
	double stop_by; /* monotonic seconds; read unlocked by export_cancelled */
	struct sink_stats stats;
	uint64_t rng;
	bool failing; /* the last attempt failed and is being retried */
	uint64_t failed_in_a_row;
	double next_reject_warn, next_drop_warn;
	uint64_t rejects_unwarned, drops_unwarned;
};

/* The sink whose thread this is (NULL on other threads), for export_cancelled. */
static __thread struct sink *current_sink;

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static size_t item_bytes(const struct export_item *it)
{
	return sizeof(*it) + it->pprof_len + it->otlp_len;
}

struct export_item *export_item__new(void)
{
	struct export_item *it = calloc(1, sizeof(*it));

	if (it)
		it->refs = 1;
	return it;
}

void export_item__put(struct export_item *it)
{
	if (!it || __atomic_sub_fetch(&it->refs, 1, __ATOMIC_ACQ_REL))
		return;
	free(it->pprof);
	free(it->otlp);
	free(it);
}

void export_item__label(struct export_item *it, const char *key, const char *value)
{
	struct export_label *l;

	if (it->nlabels >= EXPORT_MAX_LABELS || !value || !value[0])
		return;
	l = &it->labels[it->nlabels++];
	escape_label(key, l->key, sizeof(l->key));
	escape_label(value, l->value, sizeof(l->value));
}

const char *export_item__get(const struct export_item *it, const char *key)
{
	for (size_t i = 0; i < it->nlabels; i++)
		if (!strcmp(it->labels[i].key, key))
			return it->labels[i].value;
	return NULL;
}

/* Unlink and release queue node `n` (not the one in flight); caller holds the lock. */
static void unlink_node(struct sink *s, struct qnode *prev, struct qnode *n)
{
	if (prev)
		prev->next = n->next;
	else
		s->head = n->next;
	if (s->tail == n)
		s->tail = prev;
	s->stats.queued_items--;
	s->stats.queued_bytes -= item_bytes(n->it);
	export_item__put(n->it);
	free(n);
}

/* A warning about something that can happen every window, at most once a minute, with
 * how many happened since the last one; `count` is how many happened just now. */
static bool warn_due(double *next, uint64_t *unwarned, uint64_t count, uint64_t *total)
{
	double now = mono_s();

	*unwarned += count;
	if (now < *next)
		return false;
	*next = now + WARN_EVERY_S;
	*total = *unwarned;
	*unwarned = 0;
	return true;
}

void sink__push(struct sink *s, struct export_item *it)
{
	struct qnode *n = calloc(1, sizeof(*n));
	uint64_t dropped = 0, warn_count = 0;
	bool warn;

	pthread_mutex_lock(&s->lock);
	if (!n) {
		s->stats.dropped++;
		pthread_mutex_unlock(&s->lock);
		return;
	}
	__atomic_add_fetch(&it->refs, 1, __ATOMIC_ACQ_REL);
	n->it = it;
	/* room first: the oldest items that are not being delivered go */
	while (s->head && s->stats.queued_bytes + item_bytes(it) > s->opts.queue_bytes) {
		struct qnode *prev = s->head == s->in_flight ? s->head : NULL;
		struct qnode *victim = prev ? prev->next : s->head;

		if (!victim)
			break;
		unlink_node(s, prev, victim);
		s->stats.dropped++;
		dropped++;
	}
	if (s->tail)
		s->tail->next = n;
	else
		s->head = n;
	s->tail = n;
	s->stats.queued_items++;
	s->stats.queued_bytes += item_bytes(it);
	warn = dropped && warn_due(&s->next_drop_warn, &s->drops_unwarned, dropped, &warn_count);
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (warn)
		pw_warn("%s: the queue is full (--queue-size): dropped the oldest %llu "
			"profile%s\n",
			s->name, (unsigned long long)warn_count, warn_count == 1 ? "" : "s");
}

bool export_cancelled(void)
{
	struct sink *s = current_sink;
	double by;

	if (!s || !__atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE))
		return false;
	__atomic_load(&s->stop_by, &by, __ATOMIC_ACQUIRE);
	return mono_s() >= by;
}

/* Wait until `until` (monotonic s), or until the sink is told to stop; caller holds the
 * lock. A window pushed meanwhile does not end the wait: the backoff is for the back end,
 * which is no readier because there is more to send. */
static void wait_until(struct sink *s, double until)
{
	struct timespec ts;
	bool stopping = s->stopping;

	ts.tv_sec = (time_t)until;
	ts.tv_nsec = (long)((until - (double)ts.tv_sec) * 1e9);
	while (mono_s() < until && s->stopping == stopping)
		if (pthread_cond_timedwait(&s->cond, &s->lock, &ts) == ETIMEDOUT)
			break;
}

static double jitter(struct sink *s, double d)
{
	/* xorshift: the spread of retries only has to differ between sinks and hosts */
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return d * (0.8 + 0.4 * (double)(s->rng % 1000) / 1000.0);
}

/* What one attempt's result says in the log (the lock is not held). */
static void log_result(struct sink *s, enum export_result r, const char *why, bool was_failing,
		       uint64_t failed_in_a_row, bool warn_reject, uint64_t rejects)
{
	if (r == EXPORT_RETRY && !was_failing)
		pw_warn("%s: cannot deliver a profile (%s); retrying with backoff\n", s->name, why);
	else if (r == EXPORT_RETRY)
		pw_debug("%s: attempt %llu failed: %s\n", s->name,
			 (unsigned long long)failed_in_a_row, why);
	else if (was_failing)
		pw_info("%s: delivering again, after %llu failed attempt%s\n", s->name,
			(unsigned long long)failed_in_a_row, failed_in_a_row == 1 ? "" : "s");
	if (r == EXPORT_REJECT && warn_reject)
		pw_warn("%s: %llu profile%s rejected, not retried (last: %s)\n", s->name,
			(unsigned long long)rejects, rejects == 1 ? "" : "s", why);
}

static void *sink_main(void *arg)
{
	struct sink *s = arg;
	double backoff = s->opts.backoff_min_s;
	char why[256];

	current_sink = s;
	pthread_mutex_lock(&s->lock);
	for (;;) {
		enum export_result r;
		bool was_failing, warn_reject = false;
		uint64_t failed_in_a_row, rejects = 0;
		double t0, t1, wait;

		while (!s->head && !s->stopping)
			pthread_cond_wait(&s->cond, &s->lock);
		if (!s->head || (s->stopping && mono_s() >= s->stop_by))
			break;
		s->in_flight = s->head;
		pthread_mutex_unlock(&s->lock);
		snprintf(why, sizeof(why), "delivery failed");
		t0 = mono_s();
		r = s->ops->deliver(s->ctx, s->in_flight->it, why, sizeof(why));
		t1 = mono_s();
		pthread_mutex_lock(&s->lock);
		was_failing = s->failing;
		s->failing = r == EXPORT_RETRY;
		if (r == EXPORT_RETRY)
			s->failed_in_a_row++;
		failed_in_a_row = s->failed_in_a_row;
		if (r != EXPORT_RETRY)
			s->failed_in_a_row = 0;
		if (r != EXPORT_OK)
			snprintf(s->stats.last_error, sizeof(s->stats.last_error), "%s", why);
		if (r == EXPORT_REJECT)
			warn_reject =
				warn_due(&s->next_reject_warn, &s->rejects_unwarned, 1, &rejects);
		if (r == EXPORT_RETRY) {
			s->stats.failed_attempts++;
			s->in_flight = NULL;
			wait = jitter(s, backoff);
			backoff = backoff * 2 > s->opts.backoff_max_s ? s->opts.backoff_max_s
								      : backoff * 2;
			pthread_mutex_unlock(&s->lock);
			log_result(s, r, why, was_failing, failed_in_a_row, false, 0);
			pthread_mutex_lock(&s->lock);
			/* at shutdown, a retry that would come after the deadline is not waited
			 * for; one that comes before it is, but no longer than the deadline */
			if (s->stopping && t1 + wait > s->stop_by)
				break;
			wait_until(s, t1 + wait);
			continue;
		}
		if (r == EXPORT_OK) {
			s->stats.exported++;
			s->stats.last_latency_s = t1 - t0;
			s->stats.latency_sum_s += t1 - t0;
		} else {
			s->stats.rejected++;
		}
		backoff = s->opts.backoff_min_s;
		s->in_flight = NULL;
		unlink_node(s, NULL, s->head);
		pthread_mutex_unlock(&s->lock);
		log_result(s, r, why, was_failing, failed_in_a_row, warn_reject, rejects);
		pthread_mutex_lock(&s->lock);
	}
	/* out of time at shutdown: what is left is lost, and counted */
	while (s->head) {
		s->stats.dropped++;
		unlink_node(s, NULL, s->head);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

struct sink *sink__new(const char *name, const struct sink_ops *ops, void *ctx,
		       const struct sink_opts *opts)
{
	struct sink *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;

	if (!s) {
		ops->free(ctx);
		return NULL;
	}
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->ops = ops;
	s->ctx = ctx;
	s->opts = *opts;
	s->rng = (uint64_t)(uintptr_t)s ^ (uint64_t)time(NULL) ^ 0x9e3779b97f4a7c15ull;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&s->thread, NULL, sink_main, s)) {
		sink__free(s);
		return NULL;
	}
	s->started = true;
	return s;
}

void sink__carry(struct sink *s, const struct sink_stats *b)
{
	pthread_mutex_lock(&s->lock);
	s->stats.exported += b->exported;
	s->stats.failed_attempts += b->failed_attempts;
	s->stats.rejected += b->rejected;
	s->stats.dropped += b->dropped;
	s->stats.latency_sum_s += b->latency_sum_s;
	pthread_mutex_unlock(&s->lock);
}

void sink__stop(struct sink *s)
{
	double by;

	if (!s || !s->started)
		return;
	pthread_mutex_lock(&s->lock);
	if (!s->stopping) {
		by = mono_s() + s->opts.flush_timeout_s;
		__atomic_store(&s->stop_by, &by, __ATOMIC_RELEASE);
		__atomic_store_n(&s->stopping, true, __ATOMIC_RELEASE);
	}
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

void sink__join(struct sink *s)
{
	if (!s || !s->started)
		return;
	sink__stop(s);
	pthread_join(s->thread, NULL);
	s->started = false;
	s->joined = true;
}

void sink__free(struct sink *s)
{
	if (!s)
		return;
	sink__join(s);
	if (s->joined) {
		pw_info("%s: %llu profiles exported, %llu rejected, %llu dropped; %llu attempts "
			"failed\n",
			s->name, (unsigned long long)s->stats.exported,
			(unsigned long long)s->stats.rejected, (unsigned long long)s->stats.dropped,
			(unsigned long long)s->stats.failed_attempts);
	}
	while (s->head)
		unlink_node(s, NULL, s->head);
	s->ops->free(s->ctx);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

const char *sink__name(const struct sink *s)
{
	return s->name;
}

const struct sink_ops *sink__ops(const struct sink *s)
{
	return s->ops;
}

void sink__stats(struct sink *s, struct sink_stats *out)
{
	pthread_mutex_lock(&s->lock);
	*out = s->stats;
	pthread_mutex_unlock(&s->lock);
}
