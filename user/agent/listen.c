// SPDX-License-Identifier: MIT
/* Listening sockets for the agent's listener: TCP from "HOST:PORT", or a Unix socket made
 * with care, since pywalk is root and the path may be in a directory others can reach. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/listen.h"
#include "lib/util.h"

#define BACKLOG 64

/* "HOST:PORT" or "[HOST6]:PORT" into a socket address. 0 or -EINVAL. */
static int parse_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *len, bool *loopback,
		      unsigned int *port_out)
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
	*port_out = port;
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

static int open_tcp(struct listen_sock *ls, const char *addr, char *why, size_t why_size)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int one = 1;

	if (parse_addr(addr, &ss, &len, &ls->loopback, &ls->port)) {
		snprintf(why, why_size,
			 "invalid listen address '%s' (HOST:PORT, e.g. 127.0.0.1:9464, "
			 "[::1]:9464, or unix:/run/pywalk/agent.sock)",
			 addr);
		return -1;
	}
	ls->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ls->fd < 0 || setsockopt(ls->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    (ss.ss_family == AF_INET6 &&
	     setsockopt(ls->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))) ||
	    bind(ls->fd, (struct sockaddr *)&ss, len) || listen(ls->fd, BACKLOG)) {
		snprintf(why, why_size, "cannot listen on %s: %s", addr, strerror(errno));
		return -1;
	}
	return 0;
}

/* The directory a root-owned socket may be made in: nobody but root can swap what is in
 * it between our checks and our chmod. */
static int check_dir(const char *dir, char *why, size_t why_size)
{
	struct stat st;

	/* /run/pywalk is gone after a reboot: made as root's, others may only enter it */
	if (lstat(dir, &st) && errno == ENOENT && mkdir(dir, 0755) && errno != EEXIST) {
		snprintf(why, why_size, "cannot make %s for the listener's socket: %s", dir,
			 strerror(errno));
		return -1;
	}
	if (lstat(dir, &st)) {
		snprintf(why, why_size, "cannot use %s for the listener's socket: %s", dir,
			 strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		snprintf(why, why_size,
			 "%s must be a directory (not a symlink) owned by root that no one else "
			 "can write, to hold the listener's socket",
			 dir);
		return -1;
	}
	return 0;
}

static int open_unix(struct listen_sock *ls, const char *path, const char *group, char *why,
		     size_t why_size)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char dir[sizeof(sun.sun_path)];
	const char *slash = strrchr(path, '/');
	gid_t gid = 0;
	struct stat st;

	if (path[0] != '/' || strlen(path) >= sizeof(sun.sun_path) || !slash[1]) {
		snprintf(why, why_size,
			 "invalid listen address 'unix:%s' (an absolute path of at most %zu "
			 "bytes, e.g. unix:/run/pywalk/agent.sock)",
			 path, sizeof(sun.sun_path) - 1);
		return -1;
	}
	if (group) {
		struct group gr, *res = NULL;
		char buf[4096];

		if (getgrnam_r(group, &gr, buf, sizeof(buf), &res) || !res) {
			snprintf(why, why_size, "--metrics-group: no group named '%s'", group);
			return -1;
		}
		gid = gr.gr_gid;
	}
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = 0;
	if (check_dir(slash == path ? "/" : dir, why, why_size))
		return -1;
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(why, why_size,
				 "%s exists and is not a socket: not replacing it with the "
				 "listener's",
				 path);
			return -1;
		}
		if (unlink(path) && errno != ENOENT) {
			snprintf(why, why_size, "cannot remove the old socket %s: %s", path,
				 strerror(errno));
			return -1;
		}
	}
	strcpy(sun.sun_path, path);
	ls->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* the mode before bind (Linux makes the file with it, less the umask), so nobody
	 * can connect in the moment between bind and chmod */
	if (ls->fd < 0 || fchmod(ls->fd, 0600) ||
	    bind(ls->fd, (struct sockaddr *)&sun, sizeof(sun))) {
		snprintf(why, why_size, "cannot listen on unix:%s: %s", path, strerror(errno));
		return -1;
	}
	strcpy(ls->path, path);
	ls->unix_path = true;
	/* bind never follows a symlink, and the directory is root's alone: the path is ours */
	if (!lstat(path, &st)) {
		ls->dev = st.st_dev;
		ls->ino = st.st_ino;
	}
	if (!ls->ino || (group && lchown(path, 0, gid)) || chmod(path, group ? 0660 : 0600) ||
	    listen(ls->fd, BACKLOG)) {
		snprintf(why, why_size, "cannot listen on unix:%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

bool listen_addr_is_remote_tcp(const char *addr)
{
	struct sockaddr_storage ss;
	socklen_t len;
	unsigned int port;
	bool loopback;

	return strncmp(addr, "unix:", 5) && !parse_addr(addr, &ss, &len, &loopback, &port) &&
	       !loopback;
}

int listen_sock_open(struct listen_sock *ls, const char *addr, const char *group, char *why,
		     size_t why_size)
{
	int err;

	memset(ls, 0, sizeof(*ls));
	ls->fd = -1;
	if (!strncmp(addr, "unix:", 5))
		err = open_unix(ls, addr + 5, group, why, why_size);
	else if (group) {
		snprintf(why, why_size, "--metrics-group is for a unix: listen address");
		err = -1;
	} else
		err = open_tcp(ls, addr, why, why_size);
	if (err)
		listen_sock_close(ls);
	return err;
}

void listen_sock_close(struct listen_sock *ls)
{
	struct stat st;

	if (ls->fd >= 0)
		close(ls->fd);
	ls->fd = -1;
	if (ls->unix_path && !lstat(ls->path, &st) && st.st_dev == ls->dev && st.st_ino == ls->ino)
		unlink(ls->path);
	ls->unix_path = false;
}
