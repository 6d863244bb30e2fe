// SPDX-License-Identifier: MIT
/* libcurl POST with the agent's rules: no redirects followed (a sink's URL is what was
 * configured), TLS peer and host verified, at most HTTP_ANSWER_KEPT bytes of an answer
 * kept (for the error message, with the credentials cut out of it: a proxy may echo the
 * request), the request bounded in time and given up when its sink's flush time is over. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>

#include "agent/http.h"

#define HTTP_ANSWER_KEPT 200
#define CONNECT_TIMEOUT_S 10

struct http_client {
	CURL *curl;
	struct http_auth auth; /* borrowed */
	char answer[HTTP_ANSWER_KEPT + 1];
	size_t answer_len;
};

int http_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) ? -EIO : 0;
}

/* The first line of `path`, trailing whitespace dropped, malloc'ed. */
static char *read_secret(const char *path, char *why, size_t why_size)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!f) {
		snprintf(why, why_size, "cannot read %s: %s", path, strerror(errno));
		return NULL;
	}
	n = getline(&line, &cap, f);
	fclose(f);
	if (n <= 0) {
		free(line);
		snprintf(why, why_size, "%s is empty", path);
		return NULL;
	}
	while (n > 0 && isspace((unsigned char)line[n - 1]))
		line[--n] = 0;
	return line;
}

int http_base64(struct strbuf *sb, const void *data, size_t n)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = data;
	int err = 0;

	for (size_t i = 0; i < n && !err; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
			     (i + 2 < n ? p[i + 2] : 0);
		char out[4] = { tab[v >> 18], tab[(v >> 12) & 63],
				i + 1 < n ? tab[(v >> 6) & 63] : '=',
				i + 2 < n ? tab[v & 63] : '=' };

		err = strbuf_add(sb, out, 4);
	}
	return err;
}

static void free_secret(char **s)
{
	if (*s)
		explicit_bzero(*s, strlen(*s));
	free(*s);
	*s = NULL;
}

int http_auth_load(struct http_auth *a, const char *basic_file, const char *token_file, char *why,
		   size_t why_size)
{
	struct strbuf b64 = { 0 };

	memset(a, 0, sizeof(*a));
	if (basic_file && token_file) {
		/* one Authorization header: which one was meant cannot be guessed */
		snprintf(why, why_size, "give --basic-auth-file or --token-file, not both");
		return -EINVAL;
	}
	if (basic_file && !(a->basic = read_secret(basic_file, why, why_size)))
		return -EINVAL;
	if (a->basic && !strchr(a->basic, ':')) {
		snprintf(why, why_size, "%s: the first line must be user:password", basic_file);
		http_auth_free(a);
		return -EINVAL;
	}
	if (token_file && !(a->bearer = read_secret(token_file, why, why_size))) {
		http_auth_free(a);
		return -EINVAL;
	}
	/* Basic made here rather than by curl from "user:password": the header is then
	 * exactly RFC 7617's, whatever the password holds, and its base64 is known so
	 * that it can be cut out of an echoed answer */
	if (a->basic && (http_base64(&b64, a->basic, strlen(a->basic)) || strbuf_add(&b64, "", 1) ||
			 asprintf(&a->header, "Authorization: Basic %s", b64.buf) < 0))
		a->header = NULL;
	else if (a->bearer && asprintf(&a->header, "Authorization: Bearer %s", a->bearer) < 0)
		a->header = NULL;
	if (b64.buf)
		a->basic_b64 = strdup(b64.buf);
	if (b64.buf)
		explicit_bzero(b64.buf, b64.len);
	strbuf_free(&b64);
	if ((a->basic || a->bearer) && !a->header) {
		snprintf(why, why_size, "out of memory");
		http_auth_free(a);
		return -ENOMEM;
	}
	return 0;
}

void http_auth_free(struct http_auth *a)
{
	if (!a)
		return;
	free_secret(&a->basic);
	free_secret(&a->bearer);
	free_secret(&a->header);
	free_secret(&a->basic_b64);
	memset(a, 0, sizeof(*a));
}

int http_check_url(const char *url, char *why, size_t why_size)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *user = NULL, *query = NULL, *frag = NULL;
	int err = -EINVAL;

	if (!u) {
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) {
		snprintf(why, why_size, "%s: the URL must start with http:// or https://", url);
		goto out;
	}
	if (curl_url_set(u, CURLUPART_URL, url, 0) ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) || !host[0]) {
		snprintf(why, why_size, "%s: not a URL with a host (http://HOST[:PORT][/PATH])",
			 url);
		goto out;
	}
	if (!curl_url_get(u, CURLUPART_USER, &user, 0)) {
		/* the URL is not repeated: it holds the credentials */
		snprintf(why, why_size,
			 "a sink URL must not hold credentials: put them in "
			 "--basic-auth-file or --token-file");
		goto out;
	}
	if (!curl_url_get(u, CURLUPART_QUERY, &query, 0) ||
	    !curl_url_get(u, CURLUPART_FRAGMENT, &frag, 0)) {
		snprintf(why, why_size,
			 "%s: a sink URL takes no query or fragment (the API's "
			 "path and parameters are added to it)",
			 url);
		goto out;
	}
	err = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(user);
	curl_free(query);
	curl_free(frag);
	curl_url_cleanup(u);
	return err;
}

struct http_client *http_client__new(const struct http_auth *auth)
{
	struct http_client *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->curl = curl_easy_init();
	if (!c->curl) {
		free(c);
		return NULL;
	}
	if (auth)
		c->auth = *auth;
	return c;
}

void http_client__free(struct http_client *c)
{
	if (!c)
		return;
	curl_easy_cleanup(c->curl);
	free(c);
}

/* `in` into `out` (size bytes) with every occurrence of a secret replaced by
 * "[redacted]", and a secret's start at the very end too: the answer kept may have been
 * cut inside one. Secrets shorter than 4 bytes are left alone (they would redact half of
 * any message and hide next to nothing). */
static void redact(char *out, size_t size, const char *in, const char *const *secrets,
		   size_t nsecrets)
{
	static const char mark[] = "[redacted]";
	size_t n = 0;

	if (!size)
		return;
	while (*in && n + 1 < size) {
		size_t skip = 0, left = strlen(in);

		for (size_t i = 0; i < nsecrets && !skip; i++) {
			size_t slen = secrets[i] ? strlen(secrets[i]) : 0;

			if (slen < 4)
				continue;
			if (!strncmp(in, secrets[i], slen))
				skip = slen;
			else if (left < slen && left >= 4 && !strncmp(in, secrets[i], left))
				skip = left;
		}
		if (!skip) {
			out[n++] = *in++;
			continue;
		}
		for (size_t k = 0; mark[k] && n + 1 < size; k++)
			out[n++] = mark[k];
		in += skip;
	}
	out[n] = 0;
}

static int on_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	const struct http_request *r = ctx;

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	return r->cancel() ? 1 : 0;
}

static size_t on_answer(char *data, size_t size, size_t n, void *ctx)
{
	struct http_client *c = ctx;
	size_t len = size * n, room = HTTP_ANSWER_KEPT - c->answer_len;

	memcpy(c->answer + c->answer_len, data, len < room ? len : room);
	c->answer_len += len < room ? len : room;
	return len;
}

char *http_escape(struct http_client *c, const char *s)
{
	char *e = curl_easy_escape(c->curl, s, 0), *copy;

	if (!e)
		return NULL;
	copy = strdup(e);
	curl_free(e);
	return copy;
}

enum export_result http_client__post(struct http_client *c, const struct http_request *r, char *why,
				     size_t why_size)
{
	struct curl_slist *headers = NULL;
	curl_mime *mime = NULL;
	enum export_result res;
	long status = 0;
	CURLcode cc;

	if (r->cancel && r->cancel()) {
		snprintf(why, why_size, "not sent: the flush timeout is over");
		return EXPORT_RETRY;
	}
	curl_easy_reset(c->curl);
	c->answer_len = 0;
	curl_easy_setopt(c->curl, CURLOPT_URL, r->url);
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, (long)CONNECT_TIMEOUT_S);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, r->timeout_s ? r->timeout_s : 30L);
	curl_easy_setopt(c->curl, CURLOPT_USERAGENT, "pywalk-agent");
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_answer);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, c);
	if (r->cancel) {
		curl_easy_setopt(c->curl, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(c->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(c->curl, CURLOPT_XFERINFODATA, (void *)r);
	}
	for (size_t i = 0; i < 4 && r->headers[i]; i++)
		headers = curl_slist_append(headers, r->headers[i]);
	if (c->auth.header)
		headers = curl_slist_append(headers, c->auth.header);
	if (r->form_part) {
		curl_mimepart *part;

		mime = curl_mime_init(c->curl);
		part = curl_mime_addpart(mime);
		curl_mime_name(part, r->form_part);
		curl_mime_filename(part, r->form_filename ? r->form_filename : "profile");
		curl_mime_type(part, "application/octet-stream");
		curl_mime_data(part, r->body, r->len);
		curl_easy_setopt(c->curl, CURLOPT_MIMEPOST, mime);
	} else {
		char *ct = NULL;

		if (asprintf(&ct, "Content-Type: %s", r->content_type) >= 0) {
			headers = curl_slist_append(headers, ct);
			free(ct);
		}
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, r->body);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->len);
	}
	/* "Expect: 100-continue" costs a round trip per window for nothing */
	headers = curl_slist_append(headers, "Expect:");
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, headers);
	cc = curl_easy_perform(c->curl);
	if (cc == CURLE_ABORTED_BY_CALLBACK) {
		snprintf(why, why_size, "given up: the flush timeout is over");
		res = EXPORT_RETRY;
		goto out;
	}
	if (cc != CURLE_OK) {
		snprintf(why, why_size, "%s", curl_easy_strerror(cc));
		res = EXPORT_RETRY;
		goto out;
	}
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 200 && status < 300) {
		res = EXPORT_OK;
		goto out;
	}
	res = status == 408 || status == 429 || status >= 500 ? EXPORT_RETRY : EXPORT_REJECT;
	/* the answer is the back end's: printable ASCII only in our logs */
	for (size_t i = 0; i < c->answer_len; i++)
		if (!isprint((unsigned char)c->answer[i]))
			c->answer[i] = ' ';
	c->answer[c->answer_len] = 0;
	/* the newline that ends most answers, made a space above, is not part of the line */
	while (c->answer_len && c->answer[c->answer_len - 1] == ' ')
		c->answer[--c->answer_len] = 0;
	{
		const char *pass = c->auth.basic ? strchr(c->auth.basic, ':') + 1 : NULL;
		const char *secrets[] = { c->auth.basic_b64, c->auth.bearer, pass };
		char clean[HTTP_ANSWER_KEPT * 3 + 1];

		redact(clean, sizeof(clean), c->answer, secrets, 3);
		snprintf(why, why_size, "HTTP %ld%s%s", status, clean[0] ? ": " : "", clean);
		explicit_bzero(clean, sizeof(clean));
	}
	explicit_bzero(c->answer, sizeof(c->answer));
out:
	curl_mime_free(mime);
	curl_slist_free_all(headers);
	return res;
}
