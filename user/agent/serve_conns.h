/* SPDX-License-Identifier: MIT */
/* The listener's open connections, in the order they came, so that room is always left
 * for a new one: past a threshold, the oldest connection that is not in a request
 * (still sending its headers, or idle between requests) is cut. A scraper that sends its
 * request at once is then never kept out by slow or silent clients, however many
 * addresses they come from; a request being answered is never cut. */
#ifndef PW_SERVE_CONNS_H
#define PW_SERVE_CONNS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct serve_conn;

struct serve_conns {
	pthread_mutex_t lock;
	struct serve_conn *oldest, *newest;
	size_t live;	  /* open and not cut */
	size_t cut_at;	  /* a new connection past this many cuts the oldest waiting one */
	uint64_t evicted; /* atomic */
};

void serve_conns_init(struct serve_conns *sc, size_t cut_at);
void serve_conns_destroy(struct serve_conns *sc);
/* A connection on socket `fd` opened: its entry (NULL on ENOMEM: then it is not tracked
 * and never cut). */
struct serve_conn *serve_conns_opened(struct serve_conns *sc, int fd);
/* It closed (before its socket is): the entry is freed. */
void serve_conns_closed(struct serve_conns *sc, struct serve_conn *conn);
/* A request on it is being answered (not to be cut), or is done. */
void serve_conns_busy(struct serve_conns *sc, struct serve_conn *conn, bool busy);
uint64_t serve_conns_evicted(const struct serve_conns *sc);

#endif
