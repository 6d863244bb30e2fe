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
	 * blocks that long. 0 with *buf malloc'ed, or a negative errno (-EBUSY: too many pulls
	 * at once, -ESHUTDOWN: the agent is stopping). */
	int (*pull)(void *ctx, unsigned int seconds, int64_t pid, void **buf, size_t *len);
	void *ctx;
};

struct serve;

/* Listen on ADDR ("127.0.0.1:9464", "[::1]:9464", "0.0.0.0:9464"). A non-loopback address
 * needs `public`. NULL with a sentence in `why`. */
struct serve *serve__new(const char *addr, bool public, const struct serve_ops *ops, char *why,
			 size_t why_size);
void serve__free(struct serve *s);
/* Requests answered, by route (for the agent's own metrics). */
uint64_t serve__requests(const struct serve *s, const char *route);

/* Longest pull a request may ask for. */
#define SERVE_MAX_PULL_SECONDS 300

#endif
