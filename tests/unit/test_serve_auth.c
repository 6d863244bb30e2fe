// SPDX-License-Identifier: MIT
/* Unit tests for user/agent/serve_auth.c and user/agent/serve_conns.c: the Host names a loopback
 * listener accepts, the bearer token comparison, the token file's checks, and which
 * connection is cut when the listener fills. */
#define _GNU_SOURCE
#include <stdio.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/serve_auth.h"
#include "agent/serve_conns.h"

static void test_host_names_this_listener_only(void **state)
{
	(void)state;
	assert_true(serve_host_ok("localhost", 9464));
	assert_true(serve_host_ok("localhost:9464", 9464));
	assert_true(serve_host_ok("LocalHost:9464", 9464));
	assert_true(serve_host_ok("127.0.0.1:9464", 9464));
	assert_true(serve_host_ok("[::1]:9464", 9464));
	assert_false(serve_host_ok(NULL, 9464));
	assert_false(serve_host_ok("", 9464));
	assert_false(serve_host_ok("evil.example", 9464));
	assert_false(serve_host_ok("evil.example:9464", 9464));
	assert_false(serve_host_ok("localhost.evil.example", 9464));
	assert_false(serve_host_ok("127.0.0.1.evil.example:9464", 9464));
	assert_false(serve_host_ok("localhost:94640", 9464));
	assert_false(serve_host_ok("localhost:946", 9464));
	assert_false(serve_host_ok("localhost:", 9464));
	assert_false(serve_host_ok("[::1]x", 9464));
}

static void test_token_must_match_exactly(void **state)
{
	(void)state;
	assert_true(serve_token_ok("abc.123", "Bearer abc.123"));
	assert_true(serve_token_ok("abc.123", "bearer abc.123"));
	assert_false(serve_token_ok("abc.123", NULL));
	assert_false(serve_token_ok("abc.123", ""));
	assert_false(serve_token_ok("abc.123", "Bearer "));
	assert_false(serve_token_ok("abc.123", "Bearer abc.12"));
	assert_false(serve_token_ok("abc.123", "Bearer abc.1234"));
	assert_false(serve_token_ok("abc.123", "Bearer abc.124"));
	assert_false(serve_token_ok("abc.123", "Basic abc.123"));
	assert_false(serve_token_ok("abc.123", "abc.123"));
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static void test_token_file_is_checked_and_trimmed(void **state)
{
	char dir[] = "/tmp/pywalk-unit-XXXXXX", path[64], why[256];
	char *t;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/token", dir);
	write_file(path, "s3cret \r\nsecond line\n", 0600);
	t = serve_token_load(path, why, sizeof(why));
	if (getuid() == 0) {
		assert_non_null(t);
		assert_string_equal(t, "s3cret");
		serve_token_free(t);
		write_file(path, "s3cret\n", 0640);
		assert_null(serve_token_load(path, why, sizeof(why)));
		assert_non_null(strstr(why, "owned by root"));
		assert_null(strstr(why, "s3cret"));
		write_file(path, "two words\n", 0600);
		assert_null(serve_token_load(path, why, sizeof(why)));
		assert_non_null(strstr(why, "first line must be the token"));
		write_file(path, "", 0600);
		assert_null(serve_token_load(path, why, sizeof(why)));
	} else {
		assert_null(t); /* not root's */
	}
	unlink(path);
	rmdir(dir);
}

static void test_full_listener_cuts_the_oldest_waiting_connection(void **state)
{
	struct serve_conns sc;
	struct serve_conn *c[4];
	int sv[4][2];
	char b;

	(void)state;
	for (int i = 0; i < 4; i++)
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]), 0);
	serve_conns_init(&sc, 3);
	for (int i = 0; i < 3; i++)
		c[i] = serve_conns_opened(&sc, sv[i][0]);
	serve_conns_busy(&sc, c[0], true); /* in a request: never cut */
	c[3] = serve_conns_opened(&sc, sv[3][0]);
	assert_int_equal(serve_conns_evicted(&sc), 1);
	/* c[1], the oldest waiting, was shut: its peer reads the end of the stream */
	assert_int_equal(recv(sv[1][1], &b, 1, MSG_DONTWAIT), 0);
	assert_int_equal(recv(sv[0][1], &b, 1, MSG_DONTWAIT), -1);
	assert_int_equal(recv(sv[2][1], &b, 1, MSG_DONTWAIT), -1);
	for (int i = 0; i < 4; i++) {
		serve_conns_closed(&sc, c[i]);
		close(sv[i][0]);
		close(sv[i][1]);
	}
	assert_int_equal(sc.live, 0);
	assert_null(sc.oldest);
	serve_conns_destroy(&sc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_names_this_listener_only),
		cmocka_unit_test(test_token_must_match_exactly),
		cmocka_unit_test(test_token_file_is_checked_and_trimmed),
		cmocka_unit_test(test_full_listener_cuts_the_oldest_waiting_connection),
	};

	return cmocka_run_group_tests_name("serve_auth", tests, NULL, NULL);
}
