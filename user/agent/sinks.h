/* SPDX-License-Identifier: MIT */
/* The agent's sinks, each behind sink_ops (sink.h). Constructors return a running sink,
 * or NULL with a sentence in `why`. */
#ifndef PW_SINKS_H
#define PW_SINKS_H

#include <stdint.h>

#include "agent/sink.h"

/* One .pb.gz per window and process under `dir` (created 0750 if missing), keeping files
 * at most keep_ns old and keep_bytes in all (0: no limit). */
struct sink *sink_dir_new(const char *dir, uint64_t keep_ns, uint64_t keep_bytes,
			  const struct sink_opts *opts, char *why, size_t why_size);

/* Where an HTTP sink sends, and as whom. */
struct http_sink_opts {
	const char *url;	     /* base URL: http://host:port[/prefix] */
	const char *tenant;	     /* Pyroscope's X-Scope-OrgID, or NULL */
	const char *basic_auth_file; /* "user:password" */
	const char *token_file;	     /* bearer token */
};

/* Grafana Pyroscope's ingest API (POST URL/ingest, format=pprof). */
struct sink *sink_pyroscope_new(const struct http_sink_opts *o, const struct sink_opts *opts,
				char *why, size_t why_size);
/* Parca's HTTP write API (POST URL/profiles/writeraw). */
struct sink *sink_parca_new(const struct http_sink_opts *o, const struct sink_opts *opts, char *why,
			    size_t why_size);
/* OTLP profiles over HTTP (POST URL/v1development/profiles, or URL itself when it ends so;
 * opentelemetry-proto v1.11.0's schema, profiles development version 1). Its items must
 * carry the OTLP encoding (its ops say needs_otlp); --tenant is Pyroscope's, not sent. */
struct sink *sink_otlp_new(const struct http_sink_opts *o, const struct sink_opts *opts, char *why,
			   size_t why_size);

#endif
