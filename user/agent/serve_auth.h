/* SPDX-License-Identifier: MIT */
/* Who may read the agent's listener: the files it is given (token, TLS key), the bearer
 * token it may require, and the Host header a loopback listener accepts (a browser page
 * on another site reaching it by DNS rebinding names that site's host). */
#ifndef PW_SERVE_AUTH_H
#define PW_SERVE_AUTH_H

#include <stdbool.h>
#include <stddef.h>

/* PATH's whole text (at most `max` bytes, no NUL), malloc'ed; a `secret` one must be a
 * regular file owned by root that neither group nor others may read or write (what it
 * opens is every process's profile). `option` names it in errors, never its content.
 * NULL with a sentence in `why`. */
char *serve_file_load(const char *path, const char *option, size_t max, bool secret, char *why,
		      size_t why_size);
/* Free it, its bytes cleared first. */
void serve_file_free(char *s);
/* The token in PATH's first line (trailing whitespace dropped), read as a secret file. */
char *serve_token_load(const char *path, char *why, size_t why_size);
/* Free it, its bytes cleared first. */
void serve_token_free(char *token);
/* An Authorization header value is "Bearer TOKEN", compared in time that does not depend
 * on where it differs. */
bool serve_token_ok(const char *token, const char *authorization);
/* A Host header naming this loopback listener: localhost, 127.0.0.1 or [::1], with `port`
 * or none. */
bool serve_host_ok(const char *host, unsigned int port);

#endif
