/* SPDX-License-Identifier: MIT */
/* The listening socket the agent's listener serves on, made here rather than by
 * libmicrohttpd so that a Unix socket gets its owner and mode before anyone can connect,
 * and a TCP one is known to be loopback or not. */
#ifndef PW_LISTEN_H
#define PW_LISTEN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct listen_sock {
	int fd;
	bool unix_path; /* a Unix socket at `path` */
	bool loopback;	/* TCP on a loopback address */
	unsigned int port;
	char path[108]; /* sizeof(sun_path) */
	dev_t dev;	/* the socket file made, removed at exit only if still it */
	ino_t ino;
};

/* Listen on ADDR: "HOST:PORT", "[HOST6]:PORT" or "unix:/ABSOLUTE/PATH". A Unix socket's
 * directory (made 0755 if missing) must be a real directory, root's, that no one else may
 * write; a socket left
 * there by an earlier run is replaced, anything else is refused. It gets mode 0600, or
 * 0660 with group `group` when one is named. 0, or -1 with a sentence in `why`. */
int listen_sock_open(struct listen_sock *ls, const char *addr, const char *group, char *why,
		     size_t why_size);
/* Close it and remove its socket file (if it is still the one made). */
/* Whether ADDR is a TCP address on loopback: false for a Unix socket or an address that
 * does not parse (listen_sock_open says why). Known before anything is bound. */
bool listen_addr_is_remote_tcp(const char *addr);
void listen_sock_close(struct listen_sock *ls);

#endif
