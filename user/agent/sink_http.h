/* SPDX-License-Identifier: MIT */
/* What every HTTP sink (Pyroscope, Parca, OTLP) shares, so that a back end is only the
 * shape of its request: the URL checked once and kept without its trailing '/', the
 * credentials, the lines every request carries, one libcurl client (its connection
 * reused from one window to the next) and the sink's start. */
#ifndef PW_SINK_HTTP_H
#define PW_SINK_HTTP_H

#include <stddef.h>

#include "agent/http.h"
#include "agent/sinks.h"

/* A base URL's longest, its trailing '/' aside: one that does not fit is refused, since
 * cut short it would name another endpoint. */
#define HTTP_SINK_URL_MAX 2048

/* One back end: the sink's ops (their free must be http_sink_free) and what every one of
 * its requests has in common. */
struct http_backend {
	struct sink_ops ops;
	/* appended to the URL, which then names the endpoint itself, unless the URL ends in
	 * it already (as OTLP exporters take an endpoint); NULL: the URL is a base that each
	 * request adds its own path to */
	const char *path;
	const char *header; /* a "Name: value" line on every request, or NULL */
};

/* The ctx of an HTTP sink's ops. */
struct http_sink {
	char *url;
	/* the lines every request carries: the tenant's X-Scope-OrgID, the back end's header;
	 * NULL-terminated */
	const char *headers[3];
	char *tenant_header;
	struct http_auth auth;
	struct http_client *http;
};

/* A running sink of back end `b` for `o` (a tenant, when given, goes on every request as
 * X-Scope-OrgID), or NULL with a sentence in `why`. */
struct sink *http_sink_start(const struct http_backend *b, const struct http_sink_opts *o,
			     const struct sink_opts *opts, char *why, size_t why_size);
void http_sink_free(void *ctx);

/* POST `r` with the lines every request of `h` carries (they take r's headers). */
enum export_result http_sink_post(struct http_sink *h, struct http_request *r, char *why,
				  size_t why_size);

#endif
