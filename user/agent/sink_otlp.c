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
 * URL checks and credentials as the other HTTP sinks (sink_http.c). A request over
 * 64 MiB is not sent: that is the limit the protocol recommends receivers enforce, and a
 * larger body would only be refused after the transfer. */
#define _GNU_SOURCE
#include <stdio.h>

#include "agent/sink_http.h"

#define OTLP_PATH "/v1development/profiles"
/* The profiles development version of the schema out_otlp.c writes (v1.11.0). */
#define OTLP_PROFILES_VERSION "1"
#define OTLP_MAX_REQUEST ((size_t)64 << 20)

static enum export_result otlp_deliver(void *ctx, const struct export_item *it, char *why,
				       size_t why_size)
{
	struct http_sink *h = ctx;
	struct http_request r = {
		.url = h->url,
		.content_type = "application/x-protobuf",
		.body = it->otlp,
		.len = it->otlp_len,
		/* a receiver that never answers must not hold the exit past --flush-timeout */
		.cancel = export_cancelled,
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
	return http_sink_post(h, &r, why, why_size);
}

/* A base URL gets the signal's path, as OTLP exporters do with an endpoint; a URL that
 * already ends in it is taken as it is. */
static const struct http_backend otlp = {
	.ops = { .kind = "otlp",
		 .deliver = otlp_deliver,
		 .free = http_sink_free,
		 .needs_otlp = true },
	.path = OTLP_PATH,
	.header = "OTLP-Profiles-Development-Version: " OTLP_PROFILES_VERSION,
};

struct sink *sink_otlp_new(const struct http_sink_opts *o, const struct sink_opts *opts, char *why,
			   size_t why_size)
{
	return http_sink_start(&otlp, o, opts, why, why_size);
}
