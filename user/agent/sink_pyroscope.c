// SPDX-License-Identifier: MIT
/* Grafana Pyroscope's ingest API: POST URL/ingest, format=pprof, the profile as it is in a
 * multipart "profile" part, the labels in the name "SERVICE.cpu{k=v,...}", the window in
 * from and until, --tenant as X-Scope-OrgID (sink_http.c puts it on every request). Label
 * values are sanitized by the agent ([A-Za-z0-9._:/-]), so they cannot break the name's
 * syntax. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/escape.h"
#include "agent/sink_http.h"

static enum export_result pyroscope_deliver(void *ctx, const struct export_item *it, char *why,
					    size_t why_size)
{
	struct http_sink *h = ctx;
	struct strbuf name = { 0 }, url = { 0 };
	char *ename = NULL;
	struct http_request r = { .body = it->pprof,
				  .len = it->pprof_len,
				  .form_part = "profile",
				  .form_filename = "profile.pb.gz",
				  .cancel = export_cancelled };
	enum export_result res = EXPORT_REJECT;
	int err;

	/* "SERVICE.cpu{k=v,...}": the suffix picks the profile type (process_cpu) */
	err = strbuf_addf(&name, "%s.cpu{", it->service);
	for (size_t i = 0; !err && i < it->nlabels; i++)
		err = strbuf_addf(&name, "%s%s=%s", i ? "," : "", it->labels[i].key,
				  it->labels[i].value);
	if (!err)
		err = strbuf_add(&name, "}", 1);
	if (!err && !(ename = http_escape(h->http, name.buf)))
		err = -ENOMEM;
	/* Both ends rounded down: a window ends at the instant the next one starts, so its
	 * until is the next one's from, second for second. Rounding until up made every two
	 * windows overlap by a second (samples in it would be counted twice over a range). */
	if (!err)
		err = strbuf_addf(&url,
				  "%s/ingest?name=%s&from=%" PRIu64 "&until=%" PRIu64
				  "&sampleRate=%u&spyName=pywalk&format=pprof",
				  h->url, ename, (uint64_t)(it->from_ns / 1000000000u),
				  (uint64_t)(it->until_ns / 1000000000u), it->rate_hz);
	if (err) {
		snprintf(why, why_size, "out of memory");
		res = EXPORT_RETRY;
		goto out;
	}
	r.url = url.buf;
	res = http_sink_post(h, &r, why, why_size);
out:
	free(ename);
	strbuf_free(&name);
	strbuf_free(&url);
	return res;
}

static const struct http_backend pyroscope = {
	.ops = { .kind = "pyroscope", .deliver = pyroscope_deliver, .free = http_sink_free },
};

struct sink *sink_pyroscope_new(const struct http_sink_opts *o, const struct sink_opts *opts,
				char *why, size_t why_size)
{
	return http_sink_start(&pyroscope, o, opts, why, why_size);
}
