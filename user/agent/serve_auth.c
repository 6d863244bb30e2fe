// SPDX-License-Identifier: MIT
/* The listener's bearer token and Host check. The token is never logged: errors name the
 * file, not what is in it. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/serve_auth.h"

#define TOKEN_MAX 4096

char *serve_file_load(const char *path, const char *option, size_t max, bool secret, char *why,
		      size_t why_size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	size_t len = 0;
	char *buf;
	ssize_t n;

	if (fd < 0) {
		snprintf(why, why_size, "cannot read %s %s: %s", option, path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (secret && (st.st_uid != 0 || (st.st_mode & (S_IRWXG | S_IRWXO))))) {
		close(fd);
		snprintf(why, why_size, "%s %s must be a regular file%s", option, path,
			 secret ? " owned by root that group and others cannot read or write "
				  "(chmod 600)"
				: "");
		return NULL;
	}
	buf = malloc(max + 1);
	if (!buf) {
		close(fd);
		snprintf(why, why_size, "out of memory");
		return NULL;
	}
	while (len <= max && (n = read(fd, buf + len, max + 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len <= max ? len : max] = 0;
	if (len > max || memchr(buf, 0, len)) {
		serve_file_free(buf);
		snprintf(why, why_size, "%s %s is not a text file of at most %zu bytes", option,
			 path, max);
		return NULL;
	}
	return buf;
}

void serve_file_free(char *s)
{
	if (s)
		explicit_bzero(s, strlen(s));
	free(s);
}

char *serve_token_load(const char *path, char *why, size_t why_size)
{
	char *buf = serve_file_load(path, "--metrics-token-file", TOKEN_MAX, true, why, why_size);
	size_t len;

	if (!buf)
		return NULL;
	len = strcspn(buf, "\n");
	while (len && isspace((unsigned char)buf[len - 1]))
		len--;
	buf[len] = 0;
	for (size_t i = 0; i < len; i++)
		if (buf[i] <= ' ' || buf[i] > '~')
			len = 0;
	if (!len) {
		serve_file_free(buf);
		snprintf(why, why_size,
			 "--metrics-token-file %s: its first line must be the token (1-%d "
			 "printable characters, no spaces)",
			 path, TOKEN_MAX);
		return NULL;
	}
	return buf;
}

void serve_token_free(char *token)
{
	serve_file_free(token);
}

bool serve_token_ok(const char *token, const char *authorization)
{
	size_t tlen = strlen(token), alen;
	unsigned char diff = 0;

	if (!authorization || strncasecmp(authorization, "Bearer ", 7))
		return false;
	authorization += 7;
	alen = strlen(authorization);
	/* every byte of the token is looked at whatever the guess: only its length shows */
	for (size_t i = 0; i < tlen; i++)
		diff |= (unsigned char)(token[i] ^ (i < alen ? authorization[i] : 0));
	return !diff && alen == tlen;
}

bool serve_host_ok(const char *host, unsigned int port)
{
	static const char *const names[] = { "localhost", "127.0.0.1", "[::1]" };
	char want[32];

	if (!host)
		return false; /* HTTP/1.1 requires it; a browser always sends it */
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t n = strlen(names[i]);

		if (strncasecmp(host, names[i], n))
			continue;
		if (!host[n])
			return true;
		snprintf(want, sizeof(want), ":%u", port);
		if (!strcmp(host + n, want))
			return true;
	}
	return false;
}
