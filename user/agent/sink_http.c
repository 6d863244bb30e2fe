// SPDX-License-Identifier: MIT
/* The part every HTTP sink shares (sink_http.h). What is wrong with a sink's configuration
 * (a URL that is not one, a tenant Pyroscope would refuse, unreadable credentials) is
 * found here, at start, so that a back end's delivery only builds its request. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/sink_http.h"
#include "lib/util.h"

/* Grafana's rule for tenant IDs, which Pyroscope enforces: at most 150 bytes of
 * [A-Za-z0-9] and !-_.*'(), not "." nor "..". One outside it is refused here, not
 * rewritten: a rewritten tenant files every profile under somebody else's. */
static bool valid_tenant(const char *t)
{
	size_t len = strlen(t);

	if (!len || len > 150 || !strcmp(t, ".") || !strcmp(t, ".."))
		return false;
	return strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
			 "!-_.*'()") == len;
}

void http_sink_free(void *ctx)
{
	struct http_sink *h = ctx;

	if (!h)
		return;
	http_client__free(h->http);
	http_auth_free(&h->auth);
	free(h->tenant_header);
	free(h->url);
	free(h);
}

/* The first `len` bytes of `url`, and `path` unless they end in it, malloc'ed; or NULL. */
static char *endpoint(const char *url, size_t len, const char *path)
{
	size_t plen = path ? strlen(path) : 0;
	char *s;

	if (!path || (len >= plen && !strncmp(url + len - plen, path, plen)))
		path = "";
	return asprintf(&s, "%.*s%s", (int)len, url, path) < 0 ? NULL : s;
}

/* "X-Scope-OrgID: TENANT", malloc'ed; or NULL. */
static char *tenant_header(const char *tenant)
{
	char *s;

	return asprintf(&s, "X-Scope-OrgID: %s", tenant) < 0 ? NULL : s;
}

struct sink *http_sink_start(const struct http_backend *b, const struct http_sink_opts *o,
			     const struct sink_opts *opts, char *why, size_t why_size)
{
	struct http_sink *h;
	struct sink *sink;
	size_t len, n = 0;

	if (http_check_url(o->url, why, why_size))
		return NULL;
	len = strlen(o->url);
	while (len && o->url[len - 1] == '/')
		len--;
	if (len > HTTP_SINK_URL_MAX) {
		snprintf(why, why_size, "the URL is longer than %d bytes", HTTP_SINK_URL_MAX);
		return NULL;
	}
	if (o->tenant && !valid_tenant(o->tenant)) {
		snprintf(why, why_size,
			 "--tenant '%.150s': a tenant ID is 1-150 characters of A-Z a-z 0-9 "
			 "and ! - _ . * ' ( ), and not . or ..",
			 o->tenant);
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (h) {
		h->url = endpoint(o->url, len, b->path);
		h->tenant_header = o->tenant ? tenant_header(o->tenant) : NULL;
	}
	if (!h || !h->url || (o->tenant && !h->tenant_header)) {
		snprintf(why, why_size, "out of memory");
		http_sink_free(h);
		return NULL;
	}
	if (h->tenant_header)
		h->headers[n++] = h->tenant_header;
	if (b->header)
		h->headers[n++] = b->header;
	if (http_auth_load(&h->auth, o->basic_auth_file, o->token_file, why, why_size)) {
		http_sink_free(h);
		return NULL;
	}
	h->http = http_client__new(&h->auth);
	if (!h->http) {
		snprintf(why, why_size, "cannot set up libcurl");
		http_sink_free(h);
		return NULL;
	}
	/* sink__new frees h when it fails */
	sink = sink__new(b->ops.kind, &b->ops, h, opts);
	if (!sink)
		snprintf(why, why_size, "cannot start the sink's thread");
	return sink;
}

enum export_result http_sink_post(struct http_sink *h, struct http_request *r, char *why,
				  size_t why_size)
{
	for (size_t i = 0; i < ARRAY_SIZE(h->headers); i++)
		r->headers[i] = h->headers[i];
	return http_client__post(h->http, r, why, why_size);
}
