/* SPDX-License-Identifier: MIT */
/* Delivery of the agent's profiles: an export item is one encoded profile (one process, one
 * window) with what a back end needs to file it; a sink delivers items on its own thread,
 * from a bounded queue, retrying with backoff, so a back end that is down or slow never
 * stalls sampling nor another sink. What a sink does with an item is its ops' business. */
#ifndef PW_SINK_H
#define PW_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EXPORT_MAX_LABELS 16

/* A label of the process (service_name, pid, host, container_id, python_version, ...).
 * Values are sanitized by the agent: [A-Za-z0-9._:/-], at most 128 bytes. */
struct export_label {
	char key[32];
	char value[129];
};

/* One window of one process. Immutable once queued; shared by every sink (refcounted). */
struct export_item {
	uint64_t from_ns, until_ns; /* CLOCK_REALTIME */
	uint32_t rate_hz;
	uint64_t samples;
	char service[129]; /* service_name, also among the labels */
	struct export_label labels[EXPORT_MAX_LABELS];
	size_t nlabels;
	void *pprof; /* gzipped profile.proto */
	size_t pprof_len;
	void *otlp; /* ExportProfilesServiceRequest, when an OTLP sink asked for it */
	size_t otlp_len;
	int refs; /* guarded by the export lock */
};

/* What one delivery attempt concluded. */
enum export_result {
	EXPORT_OK,
	EXPORT_RETRY,  /* worth another try later (connection refused, 5xx, 429, timeout) */
	EXPORT_REJECT, /* not worth retrying (4xx other than 429, a local write error) */
};

struct sink;

struct sink_ops {
	const char *kind; /* "export-dir", "pyroscope", "parca", "otlp" */
	/* Deliver one item; `why` gets a sentence on failure. Runs on the sink's thread. */
	enum export_result (*deliver)(void *ctx, const struct export_item *it, char *why,
				      size_t why_size);
	void (*free)(void *ctx);
	bool needs_otlp; /* items must carry the OTLP encoding */
};

/* A sink's counters (read with export_sink_stats, any thread). */
struct sink_stats {
	uint64_t exported, failed_attempts, rejected, dropped;
	uint64_t queued_items, queued_bytes;
	double last_latency_s; /* of the last successful delivery */
	double latency_sum_s;  /* of all successful deliveries */
	char last_error[256];
};

struct sink_opts {
	size_t queue_bytes;   /* bound of the queue; past it the oldest items go */
	double backoff_min_s; /* first retry after this, doubling, with jitter */
	double backoff_max_s;
	double flush_timeout_s; /* at shutdown, how long to keep delivering */
};

/* Start a sink: takes ownership of ctx (freed with ops->free). NULL on failure. */
struct sink *sink__new(const char *name, const struct sink_ops *ops, void *ctx,
		       const struct sink_opts *opts);
/* Queue an item (a reference is taken). Never blocks: a full queue drops its oldest. */
void sink__push(struct sink *s, struct export_item *it);
/* Start the flush: from now the sink has its flush timeout to deliver what is queued.
 * Does not wait; stopping every sink first lets them flush at the same time. */
void sink__stop(struct sink *s);
/* Stop (if not yet) and wait for the flush to end; the counts are final after it. */
void sink__join(struct sink *s);
/* Join (if not yet), log the sink's counts and free. */
void sink__free(struct sink *s);
const char *sink__name(const struct sink *s);
const struct sink_ops *sink__ops(const struct sink *s);
void sink__stats(struct sink *s, struct sink_stats *out);
/* Add the counts of a sink this one replaces (a reload): counters never go back. */
void sink__carry(struct sink *s, const struct sink_stats *before);

/* For a delivery that can block (a network request): true once the sink whose thread
 * calls it is stopping and its flush timeout has passed, so the attempt should give up.
 * False on any other thread. */
bool export_cancelled(void);

/* A new item with no payload yet (refs = 1). NULL on ENOMEM. */
struct export_item *export_item__new(void);
void export_item__put(struct export_item *it); /* drop a reference */
/* Add a label, sanitized (the value's bytes outside [A-Za-z0-9._:/-] become '_'). */
void export_item__label(struct export_item *it, const char *key, const char *value);
/* The value of label `key`, or NULL. */
const char *export_item__get(const struct export_item *it, const char *key);

#endif
