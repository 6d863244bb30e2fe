// SPDX-License-Identifier: MIT
/* libcurl POST with the agent's rules: no redirects followed (a sink's URL is what was
 * configured), TLS peer and host verified, at most HTTP_ANSWER_KEPT bytes of an answer
 * kept (for the error message), the request bounded in time. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>

#include "http.h"

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

int http_auth_load(struct http_auth *a, const char *basic_file, const char *token_file,
		   char *why, size_t why_size)
{
	memset(a, 0, sizeof(*a));
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
	return 0;
}

void http_auth_free(struct http_auth *a)
{
	if (!a)
		return;
	if (a->basic)
		explicit_bzero(a->basic, strlen(a->basic));
	if (a->bearer)
		explicit_bzero(a->bearer, strlen(a->bearer));
	free(a->basic);
	free(a->bearer);
	memset(a, 0, sizeof(*a));
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

enum export_result http_client__post(struct http_client *c, const struct http_request *r,
				     char *why, size_t why_size)
{
	struct curl_slist *headers = NULL;
	curl_mime *mime = NULL;
	char *auth_header = NULL;
	enum export_result res;
	long status = 0;
	CURLcode cc;

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
	for (size_t i = 0; i < 4 && r->headers[i]; i++)
		headers = curl_slist_append(headers, r->headers[i]);
	if (c->auth.basic) {
		curl_easy_setopt(c->curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(c->curl, CURLOPT_USERPWD, c->auth.basic);
	} else if (c->auth.bearer && asprintf(&auth_header, "Authorization: Bearer %s",
					      c->auth.bearer) >= 0) {
		headers = curl_slist_append(headers, auth_header);
	}
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
	snprintf(why, why_size, "HTTP %ld%s%s", status, c->answer_len ? ": " : "", c->answer);
out:
	curl_mime_free(mime);
	curl_slist_free_all(headers);
	if (auth_header) {
		explicit_bzero(auth_header, strlen(auth_header));
		free(auth_header);
	}
	return res;
}
