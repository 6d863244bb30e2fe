// SPDX-License-Identifier: MIT
/* Cutting the oldest waiting connection when the listener fills. The cut is a shutdown()
 * of its socket: its own thread sees the end of the stream and closes it as for any
 * client that went away. The socket is only shut under the lock, and the closing thread
 * takes the entry out under the same lock before it closes the socket, so a number reused
 * by another file is never shut. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/socket.h>

#include "agent/serve_conns.h"

struct serve_conn {
	int fd;
	bool busy, cut;
	struct serve_conn *prev, *next; /* prev: older */
};

void serve_conns_init(struct serve_conns *sc, size_t cut_at)
{
	pthread_mutex_init(&sc->lock, NULL);
	sc->oldest = sc->newest = NULL;
	sc->live = 0;
	sc->cut_at = cut_at;
	sc->evicted = 0;
}

void serve_conns_destroy(struct serve_conns *sc)
{
	/* the daemon is stopped: every connection has been closed and its entry freed */
	pthread_mutex_destroy(&sc->lock);
}

struct serve_conn *serve_conns_opened(struct serve_conns *sc, int fd)
{
	struct serve_conn *conn = calloc(1, sizeof(*conn));

	if (!conn)
		return NULL;
	conn->fd = fd;
	pthread_mutex_lock(&sc->lock);
	if (sc->live >= sc->cut_at) {
		for (struct serve_conn *o = sc->oldest; o; o = o->next) {
			if (o->busy || o->cut)
				continue;
			shutdown(o->fd, SHUT_RDWR);
			o->cut = true;
			sc->live--;
			__atomic_add_fetch(&sc->evicted, 1, __ATOMIC_RELAXED);
			break;
		}
	}
	conn->prev = sc->newest;
	if (sc->newest)
		sc->newest->next = conn;
	else
		sc->oldest = conn;
	sc->newest = conn;
	sc->live++;
	pthread_mutex_unlock(&sc->lock);
	return conn;
}

void serve_conns_closed(struct serve_conns *sc, struct serve_conn *conn)
{
	if (!conn)
		return;
	pthread_mutex_lock(&sc->lock);
	if (conn->prev)
		conn->prev->next = conn->next;
	else
		sc->oldest = conn->next;
	if (conn->next)
		conn->next->prev = conn->prev;
	else
		sc->newest = conn->prev;
	if (!conn->cut)
		sc->live--;
	pthread_mutex_unlock(&sc->lock);
	free(conn);
}

void serve_conns_busy(struct serve_conns *sc, struct serve_conn *conn, bool busy)
{
	if (!conn)
		return;
	pthread_mutex_lock(&sc->lock);
	conn->busy = busy;
	pthread_mutex_unlock(&sc->lock);
}

uint64_t serve_conns_evicted(const struct serve_conns *sc)
{
	return __atomic_load_n(&sc->evicted, __ATOMIC_RELAXED);
}
