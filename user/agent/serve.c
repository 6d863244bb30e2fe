// SPDX-License-Identifier: MIT
/* The listener over libmicrohttpd: routes GET /metrics and GET /debug/pprof/profile;
 * everything else is 404, any method but GET (and HEAD) 405. Who may ask: a loopback TCP
 * listener answers only requests naming it in Host (403), a token, when given, is needed
 * by every request (401). Bounded so that a few clients cannot starve /metrics: a
 * connection limit in all and per client address, the oldest connection not in a request
 * cut when the listener fills (serve_conns.h), a short idle timeout (a pull's wait is not
 * idle time: its thread is in the handler), pulls limited by the agent's taps and ended
 * when their client goes away. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <microhttpd.h>

#include "agent/listen.h"
#include "agent/serve.h"
#include "agent/serve_auth.h"
#include "agent/serve_conns.h"
#include "lib/util.h"

#define MAX_CONNECTIONS 256
/* past this many, a new connection cuts the oldest one not in a request: room for a
 * scraper is always left, whatever holds the rest; and as many again must arrive before
 * a scraper's connection, if not in its request yet, is the oldest */
#define CUT_WAITING_AT 192
/* a thread per connection: what the handlers and TLS need, not the default 8 MiB */
#define THREAD_STACK_BYTES (256 << 10)
/* one client address can hold this many: a scraper, a few pulls and a spare */
#define MAX_CONNECTIONS_PER_IP 8
/* idle time allowed a client: a slow sender of headers is cut off after it */
#define IDLE_TIMEOUT_S 10
#define TLS_FILE_MAX (1 << 20) /* a certificate chain is kilobytes */

struct serve {
	struct MHD_Daemon *mhd;
	struct serve_ops ops;
	struct listen_sock ls;
	struct serve_conns conns;
	char *token;
	char *tls_cert, *tls_key; /* PEM, kept while the daemon runs */
	bool check_host;
	uint64_t metrics_requests, pull_requests; /* atomics */
	uint64_t refused[SERVE_REFUSAL__COUNT];	  /* atomics */
};

static const char *const refusal_names[SERVE_REFUSAL__COUNT] = {
	[SERVE_REFUSED_HOST] = "host",		[SERVE_REFUSED_TOKEN] = "token",
	[SERVE_REFUSED_BUSY] = "busy",		[SERVE_PULL_GONE] = "client_gone",
	[SERVE_PULL_TOO_BIG] = "memory_budget", [SERVE_CUT_WAITING] = "cut_waiting",
};

const char *serve_refusal_name(enum serve_refusal r)
{
	return refusal_names[r];
}

static void count(struct serve *s, enum serve_refusal r)
{
	__atomic_add_fetch(&s->refused[r], 1, __ATOMIC_RELAXED);
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status, const char *type,
			     void *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned int status, const char *msg)
{
	return reply(c, status, "text/plain; charset=utf-8", (void *)msg, strlen(msg),
		     MHD_RESPMEM_MUST_COPY);
}

/* Has the client of a pull closed its end (or reset it)? A request pipelined behind the
 * pull is data, not a hang-up. */
static bool client_gone(void *arg)
{
	struct MHD_Connection *c = arg;
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct pollfd pfd = { .events = POLLIN | POLLRDHUP };

	if (!ci)
		return false;
	pfd.fd = ci->connect_fd;
	if (poll(&pfd, 1, 0) <= 0)
		return false;
	return pfd.revents & (POLLRDHUP | POLLHUP | POLLERR);
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
	err = s->ops.pull(s->ops.ctx, seconds, p, client_gone, c, &buf, &len);
	switch (err) {
	case 0:
		return reply(c, MHD_HTTP_OK, "application/octet-stream", buf, len,
			     MHD_RESPMEM_MUST_FREE);
	case -EBUSY:
		count(s, SERVE_REFUSED_BUSY);
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "too many profiles at once\n");
	case -ECONNRESET:
		count(s, SERVE_PULL_GONE);
		return MHD_NO; /* nobody to answer: close */
	case -E2BIG:
		count(s, SERVE_PULL_TOO_BIG);
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "the profile outgrew the agent's --pull-size budget: ask for "
				  "fewer seconds or one pid\n");
	default:
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "the agent is stopping\n");
	}
}

static struct serve_conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct serve *s = cls;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

		*socket_context = ci ? serve_conns_opened(&s->conns, ci->connect_fd) : NULL;
	} else {
		serve_conns_closed(&s->conns, *socket_context);
		*socket_context = NULL;
	}
}

static void on_completed(void *cls, struct MHD_Connection *c, void **state,
			 enum MHD_RequestTerminationCode toe)
{
	struct serve *s = cls;

	(void)state;
	(void)toe;
	serve_conns_busy(&s->conns, conn_of(c), false);
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
		serve_conns_busy(&s->conns, conn_of(c), true);
		return MHD_YES;
	}
	if (s->check_host &&
	    !serve_host_ok(MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST),
			   s->ls.port)) {
		count(s, SERVE_REFUSED_HOST);
		return reply_text(c, MHD_HTTP_FORBIDDEN,
				  "Host must be localhost, 127.0.0.1 or [::1] (with the port)\n");
	}
	if (s->token &&
	    !serve_token_ok(s->token, MHD_lookup_connection_value(c, MHD_HEADER_KIND,
								  MHD_HTTP_HEADER_AUTHORIZATION))) {
		count(s, SERVE_REFUSED_TOKEN);
		return reply_text(c, MHD_HTTP_UNAUTHORIZED, "a bearer token is needed\n");
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
		return reply_text(
			c, MHD_HTTP_OK,
			"pywalk agent: /metrics, /debug/pprof/profile?seconds=N[&pid=P]\n");
	return reply_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
}

struct serve *serve__new(const struct serve_opts *o, const struct serve_ops *ops, char *why,
			 size_t why_size)
{
	struct serve *s = calloc(1, sizeof(*s));
	unsigned int flags =
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
	struct MHD_OptionItem opts[9] = {
		{ MHD_OPTION_CONNECTION_LIMIT, MAX_CONNECTIONS, NULL },
		{ MHD_OPTION_CONNECTION_TIMEOUT, IDLE_TIMEOUT_S, NULL },
		{ MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, s },
		{ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, s },
		{ MHD_OPTION_THREAD_STACK_SIZE, THREAD_STACK_BYTES, NULL },
	};
	size_t nopts = 5;

	if (!s) {
		snprintf(why, why_size, "out of memory");
		return NULL;
	}
	s->ls.fd = -1; /* not open: a failure before listen_sock_open closes nothing */
	s->ops = *ops;
	serve_conns_init(&s->conns, CUT_WAITING_AT);
	if (o->token_file && !(s->token = serve_token_load(o->token_file, why, why_size)))
		goto fail;
	if (!o->tls_cert != !o->tls_key) {
		snprintf(why, why_size, "--metrics-tls-cert and --metrics-tls-key go together");
		goto fail;
	}
	if (o->tls_cert) {
		if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
			snprintf(why, why_size,
				 "this libmicrohttpd is built without TLS: --metrics-tls-cert "
				 "cannot be served");
			goto fail;
		}
		if (!(s->tls_cert = serve_file_load(o->tls_cert, "--metrics-tls-cert", TLS_FILE_MAX,
						    false, why, why_size)) ||
		    !(s->tls_key = serve_file_load(o->tls_key, "--metrics-tls-key", TLS_FILE_MAX,
						   true, why, why_size)))
			goto fail;
		flags |= MHD_USE_TLS;
	}
	/* refused before anything is bound: the answer is the configuration's, not the port's */
	if (listen_addr_is_remote_tcp(o->addr) && !s->token && !o->public) {
		snprintf(why, why_size,
			 "%s is not a loopback address: the listener serves every process's "
			 "profile, so it needs --metrics-token-file (or --metrics-public to serve "
			 "anyone who can reach it)",
			 o->addr);
		goto fail;
	}
	if (listen_sock_open(&s->ls, o->addr, o->group, why, why_size))
		goto fail;
	/* a browser page reaches a loopback port by DNS rebinding, naming its own host */
	s->check_host = !s->ls.unix_path && s->ls.loopback;
	if (!s->ls.unix_path) /* a Unix socket has no client addresses to count by */
		opts[nopts++] = (struct MHD_OptionItem){ MHD_OPTION_PER_IP_CONNECTION_LIMIT,
							 MAX_CONNECTIONS_PER_IP, NULL };
	if (s->tls_cert) {
		opts[nopts++] =
			(struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, s->tls_cert };
		opts[nopts++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls_key };
	}
	opts[nopts] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET,
				  s->ls.fd, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
	if (!s->mhd) {
		snprintf(why, why_size,
			 s->tls_cert ? "cannot listen on %s (is the TLS certificate or key not "
				       "PEM, or not a pair?)"
				     : "cannot listen on %s: %s",
			 o->addr, strerror(errno));
		goto fail;
	}
	return s;
fail:
	listen_sock_close(&s->ls);
	serve_token_free(s->token);
	serve_file_free(s->tls_cert);
	serve_file_free(s->tls_key);
	serve_conns_destroy(&s->conns);
	free(s);
	return NULL;
}

void serve__stop(struct serve *s)
{
	if (!s || !s->mhd)
		return;
	MHD_stop_daemon(s->mhd);
	s->mhd = NULL;
	s->ls.fd = -1; /* libmicrohttpd closed it */
	listen_sock_close(&s->ls);
}

void serve__free(struct serve *s)
{
	if (!s)
		return;
	serve__stop(s);
	serve_token_free(s->token);
	serve_file_free(s->tls_cert);
	serve_file_free(s->tls_key);
	serve_conns_destroy(&s->conns);
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

uint64_t serve__refused(const struct serve *s, enum serve_refusal r)
{
	if (!s)
		return 0;
	if (r == SERVE_CUT_WAITING)
		return serve_conns_evicted(&s->conns);
	return __atomic_load_n(&s->refused[r], __ATOMIC_RELAXED);
}
