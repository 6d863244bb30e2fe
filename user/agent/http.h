/* SPDX-License-Identifier: MIT */
/* HTTP(S) POST for the agent's sinks, over libcurl: one client per sink (its connections
 * are reused), TLS verification on, proxies from the environment as curl reads them,
 * bounded time per request, and the answer turned into an export_result: 2xx delivered;
 * a connection failure, a timeout, 408, 429 or 5xx worth retrying; any other status not. */
#ifndef PW_HTTP_H
#define PW_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/escape.h"
#include "agent/sink.h"

struct http_client;

struct http_auth {
	char *basic;	 /* "user:password", NULL: none */
	char *bearer;	 /* token, NULL: none */
	char *header;	 /* the Authorization header line either makes, NULL: none */
	char *basic_b64; /* base64 of basic, as it goes on the wire (kept to redact it) */
};

/* Read the credentials from files (first line, trailing whitespace dropped); either path
 * may be NULL, not both given. 0, or a negative errno with a sentence in `why` (the secret
 * never is). */
int http_auth_load(struct http_auth *a, const char *basic_file, const char *token_file, char *why,
		   size_t why_size);
void http_auth_free(struct http_auth *a);

struct http_request {
	const char *url;
	const char *content_type; /* of the body (ignored with a form part) */
	const void *body;
	size_t len;
	const char *form_part; /* non-NULL: multipart/form-data with the body as this
					* part, as a file named form_filename */
	const char *form_filename;
	const char *headers[4]; /* extra "Name: value" lines, NULL-terminated */
	long timeout_s;		/* whole request; 0: 30 s */
	bool (*cancel)(void);	/* polled while the request runs: true gives up */
};

/* `url` as a sink's base URL: http or https, a host, no credentials (they belong in the
 * credential files, not on a command line), no query or fragment (paths are appended).
 * 0, or -EINVAL with a sentence in `why`. */
int http_check_url(const char *url, char *why, size_t why_size);

/* Standard base64 (with padding) of p[0..n) appended to sb. 0 or -ENOMEM. */
int http_base64(struct strbuf *sb, const void *p, size_t n);

/* One global curl initialization: call once before any thread uses a client. 0 or -errno. */
int http_global_init(void);

struct http_client *http_client__new(const struct http_auth *auth);
void http_client__free(struct http_client *c);
/* POST; `why` says what went wrong (status and the start of the answer, made printable). */
enum export_result http_client__post(struct http_client *c, const struct http_request *r, char *why,
				     size_t why_size);

/* `s` percent-encoded for a URL query into a malloc'ed string, or NULL. */
char *http_escape(struct http_client *c, const char *s);

#endif
