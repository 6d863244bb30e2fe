// SPDX-License-Identifier: MIT
/* The listener over libmicrohttpd: parses the address, refuses a non-loopback one unless
 * asked, and routes GET /metrics and GET /debug/pprof/profile; everything else is 404, any
 * method but GET (and HEAD) 405. Bounded: a connection limit and a per-connection timeout. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <microhttpd.h>

#include "serve.h"
#include "util.h"

#define MAX_CONNECTIONS 32
#define CONNECTION_TIMEOUT_S (SERVE_MAX_PULL_SECONDS + 30)

struct serve {
	struct MHD_Daemon *mhd;
	struct serve_ops ops;
	uint64_t metrics_requests, pull_requests; /* atomics */
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status, const char *type,
			     void *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned int status, const char *msg)
{
	return reply(c, status, "text/plain; charset=utf-8", (void *)msg, strlen(msg),
		     MHD_RESPMEM_MUST_COPY);
}

static enum MHD_Result serve_pull(struct serve *s, struct MHD_Connection *c)
{
	const char *sec = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "seconds");
	const char *pid = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "pid");
	uint32_t seconds = 30, p = 0;
	void *buf = NULL;
	size_t len = 0;
	int err;

	if (sec && parse_u32(sec, 1, SERVE_MAX_PULL_SECONDS, &seconds))
		return reply_text(c, MHD_HTTP_BAD_REQUEST, "seconds must be 1-300\n");
	if (pid && parse_u32(pid, 1, 0x3fffffff, &p))
		return reply_text(c, MHD_HTTP_BAD_REQUEST, "pid must be a process id\n");
	__atomic_add_fetch(&s->pull_requests, 1, __ATOMIC_RELAXED);
	err = s->ops.pull(s->ops.ctx, seconds, p, &buf, &len);
	if (err == -EBUSY)
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "too many profiles at once\n");
	if (err)
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "the agent is stopping\n");
	return reply(c, MHD_HTTP_OK, "application/octet-stream", buf, len, MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **state)
{
	struct serve *s = cls;
	char *text;

	(void)version;
	(void)upload;
	(void)upload_size;
	/* the first call per request only announces it: answer on the second */
	if (!*state) {
		*state = (void *)1;
		return MHD_YES;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n");
	if (!strcmp(url, "/metrics")) {
		__atomic_add_fetch(&s->metrics_requests, 1, __ATOMIC_RELAXED);
		text = s->ops.metrics(s->ops.ctx);
		if (!text)
			return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
		return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text,
			     strlen(text), MHD_RESPMEM_MUST_FREE);
	}
	if (!strcmp(url, "/debug/pprof/profile"))
		return serve_pull(s, c);
	if (!strcmp(url, "/"))
		return reply_text(c, MHD_HTTP_OK,
				  "pywalk agent: /metrics, /debug/pprof/profile?seconds=N[&pid=P]\n");
	return reply_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
}

/* "HOST:PORT" or "[HOST6]:PORT" into a socket address. 0 or -EINVAL. */
static int parse_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *len,
		      bool *loopback)
{
	char host[128];
	const char *colon;
	uint32_t port;
	size_t hlen;

	memset(ss, 0, sizeof(*ss));
	if (addr[0] == '[') {
		const char *end = strchr(addr, ']');

		if (!end || end[1] != ':')
			return -EINVAL;
		hlen = (size_t)(end - addr - 1);
		colon = end + 1;
		addr++;
	} else {
		colon = strrchr(addr, ':');
		if (!colon)
			return -EINVAL;
		hlen = (size_t)(colon - addr);
	}
	if (hlen >= sizeof(host) || parse_u32(colon + 1, 1, 65535, &port))
		return -EINVAL;
	memcpy(host, addr, hlen);
	host[hlen] = 0;
	if (!hlen)
		strcpy(host, "127.0.0.1"); /* ":9464" is loopback: the safe reading */
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		*loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
		*len = sizeof(*in);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
		*len = sizeof(*in6);
		return 0;
	}
	return -EINVAL;
}

struct serve *serve__new(const char *addr, bool public, const struct serve_ops *ops, char *why,
			 size_t why_size)
{
	struct sockaddr_storage ss;
	struct serve *s;
	socklen_t len;
	bool loopback;
	unsigned int flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			     MHD_USE_ERROR_LOG;

	if (parse_addr(addr, &ss, &len, &loopback)) {
		snprintf(why, why_size,
			 "invalid listen address '%s' (HOST:PORT, e.g. 127.0.0.1:9464 or "
			 "[::1]:9464)",
			 addr);
		return NULL;
	}
	if (!loopback && !public) {
		snprintf(why, why_size,
			 "%s is not a loopback address: the metrics listener serves profiles of "
			 "every process, so a public address must be asked for with "
			 "--metrics-public",
			 addr);
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(why, why_size, "out of memory");
		return NULL;
	}
	s->ops = *ops;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
				  (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT,
				  (unsigned int)MAX_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT,
				  (unsigned int)CONNECTION_TIMEOUT_S, MHD_OPTION_END);
	if (!s->mhd) {
		snprintf(why, why_size, "cannot listen on %s: %s", addr, strerror(errno));
		free(s);
		return NULL;
	}
	return s;
}

void serve__free(struct serve *s)
{
	if (!s)
		return;
	MHD_stop_daemon(s->mhd);
	free(s);
}

uint64_t serve__requests(const struct serve *s, const char *route)
{
	if (!s)
		return 0;
	if (!strcmp(route, "metrics"))
		return __atomic_load_n(&s->metrics_requests, __ATOMIC_RELAXED);
	return __atomic_load_n(&s->pull_requests, __ATOMIC_RELAXED);
}
