/* SPDX-License-Identifier: MIT */
/* What `pywalk agent` does beside sampling: close a window every interval (one pprof per
 * process, handed to every sink), answer pulls from the listener, keep its own metrics.
 * Runs on the engine's thread from its tick hook; the listener and the sinks have their
 * own threads and meet it only through locked queues. */
#ifndef PW_AGENT_H
#define PW_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "agent/sink.h"
#include "profile/profile.h"
#include "agent/serve.h"

#define AGENT_MAX_SERVICE_RULES 32	       /* the --service help and error say 32 */
#define AGENT_PULL_BYTES_DEFAULT (64ull << 20) /* the --pull-size help says 64M */

struct agent_config {
	uint64_t interval_ms;				/* window length */
	const char *export_dir;				/* NULL: none */
	uint64_t keep_ms, keep_bytes;			/* export-dir retention (0: no limit) */
	const char *pyroscope;				/* base URL, NULL: none */
	const char *pyroscope_tenant;			/* X-Scope-OrgID */
	const char *parca;				/* base URL, NULL: none */
	const char *otlp;				/* base URL, NULL: none */
	const char *basic_auth_file;			/* "user:password" for the HTTP sinks */
	const char *token_file;				/* bearer token for the HTTP sinks */
	const char *metrics;				/* listen address, NULL: none */
	bool metrics_public;				/* a non-loopback listen address is meant */
	const char *metrics_group;			/* a unix: listener's group (mode 0660) */
	const char *metrics_token_file;			/* the listener's bearer token */
	const char *metrics_tls_cert, *metrics_tls_key; /* the listener's HTTPS (PEM files) */
	uint64_t pull_bytes;	/* one pull's memory budget (0: the default) */
	const char *host;	/* the host label (default: gethostname) */
	uint64_t queue_bytes;	/* per-sink queue bound */
	double flush_timeout_s; /* at shutdown */
	/* --service GLOB=NAME, in order: the first whose GLOB matches a process's script,
	 * module or comm names its service, unless its environment names it */
	const char *service_rules[AGENT_MAX_SERVICE_RULES];
	size_t nservice_rules;
};

struct agent;

#define AGENT_MAX_SINKS 4

/* What an agent has counted since pywalk started: a reload's new agent takes it over, so
 * that the metrics' counters never go back (Prometheus would read a restart). */
struct agent_totals {
	uint64_t windows, profiles, profile_bytes, encode_failures;
	struct profile_drops drops;
	size_t nsinks;
	char sink_names[AGENT_MAX_SINKS][32];
	struct sink_stats sinks[AGENT_MAX_SINKS];
	uint64_t listener_refused[SERVE_REFUSAL__COUNT];
};

/* Sinks and listener up; the engine must be started. NULL with the error printed. */
struct agent *agent__new(const struct agent_config *c, struct engine *e);
/* Flush: close the current window, deliver what the sinks can within their timeout; then
 * what it counted goes to *totals (if not NULL), for the agent that replaces it. */
void agent__free(struct agent *a, struct agent_totals *totals);

void agent__totals(struct agent *a, struct agent_totals *t);
/* Carry `t` over to a new agent (a sink's counts to the sink of the same name). */
void agent__carry(struct agent *a, const struct agent_totals *t);

/* The engine hook's work: windows, pulls, metrics. 0 or a negative errno. */
int agent__tick(struct agent *a, uint64_t now_ns);
/* Close the window now (SIGHUP, shutdown). 0 or a negative errno. */
int agent__close_window(struct agent *a);

#endif
