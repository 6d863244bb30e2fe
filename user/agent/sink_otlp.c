// SPDX-License-Identifier: MIT
/* The OTLP profiles sink: each item's ExportProfilesServiceRequest (out_otlp.c) as an
 * OTLP/HTTP request, POST URL/v1development/profiles with a binary protobuf body, to an
 * OpenTelemetry Collector (whose profiles support is behind --feature-gates=
 * +service.profilesSupport) or a back end that takes the signal.
 *
 * The signal is in development upstream and its schema still changes incompatibly under
 * the same path, so receivers check an OTLP-Profiles-Development-Version header before they
 * decode: a missing one means version 1, and a receiver that does not support the version
 * answers 400, which is not retried (http.c). pywalk writes the schema of
 * opentelemetry-proto v1.11.0, which is version 1, and says so explicitly: a receiver that
 * moved to a later version then refuses the request instead of misreading it. A receiver
 * that predates the header ignores it, and one built on a release before v1.10.0 reads
 * Sample's fields under other numbers: that skew cannot be detected from here.
 *
 * Credentials as the other HTTP sinks (basic or bearer, from files). A request over
 * 64 MiB is not sent: that is the limit the protocol recommends receivers enforce, and a
 * larger body would only be refused after the transfer. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/http.h"
#include "agent/sinks.h"

#define OTLP_PATH "/v1development/profiles"
/* The profiles development version of the schema out_otlp.c writes (v1.11.0). */
#define OTLP_PROFILES_VERSION "1"
#define OTLP_MAX_REQUEST ((size_t)64 << 20)

struct otlp_sink {
	char url[2048 + sizeof(OTLP_PATH)]; /* the full endpoint */
	struct http_auth auth;
	struct http_client *http;
};

static void otlp_sink_free(void *ctx)
{
	struct otlp_sink *s = ctx;

	if (!s)
		return;
	http_client__free(s->http);
	http_auth_free(&s->auth);
	free(s);
}

static enum export_result otlp_deliver(void *ctx, const struct export_item *it, char *why,
				       size_t why_size)
{
	struct otlp_sink *s = ctx;
	struct http_request r = {
		.url = s->url,
		.content_type = "application/x-protobuf",
		.body = it->otlp,
		.len = it->otlp_len,
		.headers = { "OTLP-Profiles-Development-Version: " OTLP_PROFILES_VERSION },
	};

	if (!it->otlp) {
		snprintf(why, why_size, "the item carries no OTLP encoding");
		return EXPORT_REJECT;
	}
	if (it->otlp_len > OTLP_MAX_REQUEST) {
		snprintf(why, why_size, "the request is %zu bytes, over the %zu MiB receivers take",
			 it->otlp_len, OTLP_MAX_REQUEST >> 20);
		return EXPORT_REJECT;
	}
	return http_client__post(s->http, &r, why, why_size);
}

static const struct sink_ops otlp_ops = {
	.kind = "otlp",
	.deliver = otlp_deliver,
	.free = otlp_sink_free,
	.needs_otlp = true,
};

struct sink *sink_otlp_new(const struct http_sink_opts *o, const struct sink_opts *opts, char *why,
			   size_t why_size)
{
	struct otlp_sink *s;
	struct sink *sink;
	size_t len;

	/* the check every HTTP sink makes: a host, no credentials, no query or fragment */
	if (http_check_url(o->url, why, why_size))
		return NULL;
	len = strlen(o->url);
	while (len && o->url[len - 1] == '/')
		len--;
	if (len > sizeof(s->url) - sizeof(OTLP_PATH)) {
		snprintf(why, why_size, "the URL is longer than %zu bytes",
			 sizeof(s->url) - sizeof(OTLP_PATH));
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(why, why_size, "out of memory");
		return NULL;
	}
	/* a base URL gets the signal's path, as OTLP exporters do with an endpoint; a URL that
	 * already ends in it is taken as it is */
	if (len >= strlen(OTLP_PATH) &&
	    !strncmp(o->url + len - strlen(OTLP_PATH), OTLP_PATH, strlen(OTLP_PATH)))
		snprintf(s->url, sizeof(s->url), "%.*s", (int)len, o->url);
	else
		snprintf(s->url, sizeof(s->url), "%.*s" OTLP_PATH, (int)len, o->url);
	if (http_auth_load(&s->auth, o->basic_auth_file, o->token_file, why, why_size)) {
		otlp_sink_free(s);
		return NULL;
	}
	s->http = http_client__new(&s->auth);
	if (!s->http) {
		snprintf(why, why_size, "cannot set up libcurl");
		otlp_sink_free(s);
		return NULL;
	}
	/* sink__new frees s when it fails */
	sink = sink__new(otlp_ops.kind, &otlp_ops, s, opts);
	if (!sink)
		snprintf(why, why_size, "cannot start the sink's thread");
	return sink;
}
