/* SPDX-License-Identifier: MIT */
/* The agent's HTTP listener (libmicrohttpd, a thread per connection): GET /metrics in the
 * Prometheus text format, and GET /debug/pprof/profile?seconds=N[&pid=P], the pull
 * endpoint Parca's and Pyroscope's scrapers and `go tool pprof` speak. The listener knows
 * nothing of sampling: it asks through serve_ops, whose calls come on its own threads. */
#ifndef PW_SERVE_H
#define PW_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct serve_ops {
	/* The current /metrics text (malloc'ed, NUL-terminated), or NULL on ENOMEM. */
	char *(*metrics)(void *ctx);
	/* A gzipped pprof of the next `seconds` of samples (of PID `pid` only, when > 0):
	 * blocks that long, or until gone(gone_arg) says the client went away. 0 with *buf
	 * malloc'ed, or a negative errno (-EBUSY: too many pulls at once, -ESHUTDOWN: the
	 * agent is stopping, -ECONNRESET: the client went away, -E2BIG: the profile outgrew
	 * its memory budget). */
	int (*pull)(void *ctx, unsigned int seconds, int64_t pid, bool (*gone)(void *),
		    void *gone_arg, void **buf, size_t *len);
	void *ctx;
};

struct serve_opts {
	const char *addr;	/* "127.0.0.1:9464", "[::1]:9464", "unix:/run/pywalk/agent.sock" */
	bool public;		/* a non-loopback address without a token is meant */
	const char *group;	/* a Unix socket's group (mode 0660), NULL: root's alone */
	const char *token_file; /* every request needs "Authorization: Bearer" it, NULL: not */
	const char *tls_cert;	/* PEM certificate (chain) and key files: HTTPS, NULL: HTTP */
	const char *tls_key;
};

/* What the listener refused or cut short, by reason (for the agent's own metrics). */
enum serve_refusal {
	SERVE_REFUSED_HOST,  /* a loopback listener's Host header named another site */
	SERVE_REFUSED_TOKEN, /* no or a wrong bearer token */
	SERVE_REFUSED_BUSY,  /* too many pulls at once */
	SERVE_PULL_GONE,     /* a pull whose client went away before its end */
	SERVE_PULL_TOO_BIG,  /* a pull that outgrew its memory budget */
	SERVE_CUT_WAITING,   /* a connection not in a request, cut to make room */
	SERVE_REFUSAL__COUNT,
};
const char *serve_refusal_name(enum serve_refusal r);

struct serve;

/* Listen per `o`. NULL with a sentence in `why`. */
struct serve *serve__new(const struct serve_opts *o, const struct serve_ops *ops, char *why,
			 size_t why_size);
/* No more connections, the open ones closed (its counts are final then). */
void serve__stop(struct serve *s);
/* Stop (if not yet) and free. */
void serve__free(struct serve *s);
/* Requests answered, by route ("metrics" or "pull"). */
uint64_t serve__requests(const struct serve *s, const char *route);
uint64_t serve__refused(const struct serve *s, enum serve_refusal r);

/* Longest pull a request may ask for. */
#define SERVE_MAX_PULL_SECONDS 300

#endif
