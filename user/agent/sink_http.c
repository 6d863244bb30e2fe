// SPDX-License-Identifier: MIT
/* The HTTP sinks that take pprof as it is: Grafana Pyroscope's ingest API (POST /ingest,
 * format=pprof, the profile as a multipart "profile" part, labels in the name
 * "SERVICE.cpu{k=v,...}") and Parca's HTTP write API (POST /profiles/writeraw, JSON with
 * the profile in base64 and the __name__ label it requires). Label values are sanitized by
 * the agent ([A-Za-z0-9._:/-]), so they cannot break either syntax. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/escape.h"
#include "lib/json.h"
#include "agent/http.h"
#include "agent/sinks.h"

struct http_sink {
	char url[2048 + 1]; /* base URL, no trailing '/' */
	char tenant[256];
	struct http_auth auth;
	struct http_client *http;
};

static void http_sink_free(void *ctx)
{
	struct http_sink *h = ctx;

	if (!h)
		return;
	http_client__free(h->http);
	http_auth_free(&h->auth);
	free(h);
}

/* ---- Pyroscope ------------------------------------------------------------------------ */

static enum export_result pyroscope_deliver(void *ctx, const struct export_item *it, char *why,
					    size_t why_size)
{
	struct http_sink *h = ctx;
	struct strbuf name = { 0 }, url = { 0 };
	char *ename = NULL, tenant[300];
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
	if (h->tenant[0]) {
		snprintf(tenant, sizeof(tenant), "X-Scope-OrgID: %s", h->tenant);
		r.headers[0] = tenant;
	}
	res = http_client__post(h->http, &r, why, why_size);
out:
	free(ename);
	strbuf_free(&name);
	strbuf_free(&url);
	return res;
}

/* ---- Parca ---------------------------------------------------------------------------- */

static enum export_result parca_deliver(void *ctx, const struct export_item *it, char *why,
					size_t why_size)
{
	struct http_sink *h = ctx;
	struct strbuf body = { 0 }, url = { 0 }, raw = { 0 };
	struct http_request r = { .content_type = "application/json", .cancel = export_cancelled };
	enum export_result res;
	struct json w;
	int err;

	/* grpc-gateway's JSON of WriteRawRequest: series[{labels{labels[]}, samples[]}] */
	json_init(&w, &body, false);
	json_begin_object(&w);
	json_key(&w, "series");
	json_begin_array(&w);
	json_begin_object(&w);
	json_key(&w, "labels");
	json_begin_object(&w);
	json_key(&w, "labels");
	json_begin_array(&w);
	for (size_t i = 0; i <= it->nlabels; i++) {
		json_begin_object(&w);
		json_key_string(&w, "name", i ? it->labels[i - 1].key : "__name__");
		json_key_string(&w, "value", i ? it->labels[i - 1].value : "process_cpu");
		json_end_object(&w);
	}
	json_end_array(&w);
	json_end_object(&w);
	json_key(&w, "samples");
	json_begin_array(&w);
	json_begin_object(&w);
	json_key(&w, "rawProfile");
	/* base64 needs no escaping: the string goes through the writer unchanged */
	err = http_base64(&raw, it->pprof, it->pprof_len);
	if (err)
		json_fail(&w, err);
	json_string(&w, raw.buf ? raw.buf : "");
	json_end_object(&w);
	json_end_array(&w);
	json_end_object(&w);
	json_end_array(&w);
	json_key_bool(&w, "normalized", true);
	json_end_object(&w);
	err = json_finish(&w);
	strbuf_free(&raw);
	if (!err)
		err = strbuf_addf(&url, "%s/profiles/writeraw", h->url);
	if (err) {
		snprintf(why, why_size, "out of memory");
		res = EXPORT_RETRY;
		goto out;
	}
	r.url = url.buf;
	r.body = body.buf;
	r.len = body.len;
	res = http_client__post(h->http, &r, why, why_size);
out:
	strbuf_free(&body);
	strbuf_free(&url);
	return res;
}

static const struct sink_ops pyroscope_ops = {
	.kind = "pyroscope",
	.deliver = pyroscope_deliver,
	.free = http_sink_free,
};

static const struct sink_ops parca_ops = {
	.kind = "parca",
	.deliver = parca_deliver,
	.free = http_sink_free,
};

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

/* A sink for `url` (http or https, a trailing '/' dropped) with its credentials. */
static struct sink *http_sink_new(const struct sink_ops *ops, const struct http_sink_opts *o,
				  const struct sink_opts *opts, char *why, size_t why_size)
{
	struct http_sink *h;
	struct sink *sink;
	size_t len;

	if (http_check_url(o->url, why, why_size))
		return NULL;
	len = strlen(o->url);
	while (len && o->url[len - 1] == '/')
		len--;
	/* cut to fit, it would name another endpoint: refused, as the OTLP sink does */
	if (len >= sizeof(h->url)) {
		snprintf(why, why_size, "the URL is longer than %zu bytes", sizeof(h->url) - 1);
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
	if (!h) {
		snprintf(why, why_size, "out of memory");
		return NULL;
	}
	snprintf(h->url, sizeof(h->url), "%.*s", (int)len, o->url);
	if (o->tenant)
		snprintf(h->tenant, sizeof(h->tenant), "%s", o->tenant);
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
	sink = sink__new(ops->kind, ops, h, opts);
	if (!sink)
		snprintf(why, why_size, "cannot start the sink's thread");
	return sink;
}

struct sink *sink_pyroscope_new(const struct http_sink_opts *o, const struct sink_opts *opts,
				char *why, size_t why_size)
{
	return http_sink_new(&pyroscope_ops, o, opts, why, why_size);
}

struct sink *sink_parca_new(const struct http_sink_opts *o, const struct sink_opts *opts, char *why,
			    size_t why_size)
{
	return http_sink_new(&parca_ops, o, opts, why, why_size);
}
