// SPDX-License-Identifier: MIT
/* Parca's HTTP write API: POST URL/profiles/writeraw, grpc-gateway's JSON of a
 * WriteRawRequest with the profile as it is, in base64, and the __name__ label Parca
 * requires beside the process's. Label values are sanitized by the agent
 * ([A-Za-z0-9._:/-]) and escaped by the JSON writer. */
#define _GNU_SOURCE
#include <stdio.h>

#include "lib/escape.h"
#include "lib/json.h"
#include "agent/sink_http.h"

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
	res = http_sink_post(h, &r, why, why_size);
out:
	strbuf_free(&body);
	strbuf_free(&url);
	return res;
}

static const struct http_backend parca = {
	.ops = { .kind = "parca", .deliver = parca_deliver, .free = http_sink_free },
};

struct sink *sink_parca_new(const struct http_sink_opts *o, const struct sink_opts *opts, char *why,
			    size_t why_size)
{
	return http_sink_start(&parca, o, opts, why, why_size);
}
