// SPDX-License-Identifier: MIT
/* Unit tests for user/output/outfile.c, the -o file opened as root: symbolic links planted at the
 * destination or in its directory part do not redirect the write, the temporary file is
 * close-on-exec, honours the umask and never outlives a failure, FIFOs and devices are
 * written in place and a FIFO without a reader fails at once. Most need root (lchown). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "output/outfile.h"

#define VICTIM_TEXT "root-only victim\n"
#define NOBODY 65534

static char dir[64];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/pywalk-test-outfile-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path);
}

static int teardown(void **state)
{
	(void)state;
	umask(022);
	if (chdir("/"))
		return -1;
	return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* dir/rel, in a buffer that lives as long as the calling block */
static char *at(char *buf, size_t size, const char *rel)
{
	snprintf(buf, size, "%s/%s", dir, rel);
	return buf;
}
#define AT(rel) at((char[256]){ 0 }, 256, (rel))

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void assert_content(const char *path, const char *want)
{
	char buf[256] = "";
	int fd = open(path, O_RDONLY | O_NOFOLLOW);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
	assert_string_equal(buf, want);
}

/* Entries of d whose name contains `part` (all entries for "") */
static int count_entries(const char *d, const char *part)
{
	DIR *dp = opendir(d);
	struct dirent *e;
	int n = 0;

	assert_non_null(dp);
	while ((e = readdir(dp)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strstr(e->d_name, part))
			n++;
	closedir(dp);
	return n;
}

static void skip_unless_root(void)
{
	if (geteuid() != 0) {
		print_message("skipped: needs root (lchown to another user)\n");
		skip();
	}
}

static void test_symlink_at_last_component_is_refused(void **state)
{
	struct outfile o;

	(void)state;
	write_file(AT("victim"), VICTIM_TEXT, 0600);
	assert_int_equal(symlink(AT("victim"), AT("out.folded")), 0);
	assert_int_equal(outfile_open(&o, AT("out.folded")), -ELOOP);
	outfile_abort(&o);
	assert_content(AT("victim"), VICTIM_TEXT);
	/* the link is left as it was, and no temporary file */
	assert_int_equal(count_entries(dir, ""), 2);

	/* a link to a device is refused too: the device was not named */
	assert_int_equal(symlink("/dev/null", AT("null")), 0);
	assert_int_equal(outfile_open(&o, AT("null")), -ELOOP);
	outfile_abort(&o);
}

static void check_mode(mode_t mask, mode_t want)
{
	struct outfile o;
	struct stat st;

	umask(mask);
	assert_int_equal(outfile_open(&o, AT("out.folded")), 0);
	assert_int_equal(fstat(fileno(o.f), &st), 0);
	assert_int_equal(st.st_mode & 07777, want);
	fputs("x 1\n", o.f);
	assert_int_equal(outfile_commit(&o), 0);
	assert_int_equal(lstat(AT("out.folded"), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, want);
	assert_int_equal(unlink(AT("out.folded")), 0);
}

static void test_temp_file_mode_honours_umask(void **state)
{
	(void)state;
	check_mode(077, 0600);
	check_mode(022, 0644);
}

static void test_existing_file_untouched_until_commit(void **state)
{
	struct outfile o;

	(void)state;
	write_file(AT("out.folded"), "old 1\n", 0644);
	assert_int_equal(outfile_open(&o, AT("out.folded")), 0);
	fputs("new 2\n", o.f);
	assert_int_equal(fflush(o.f), 0);
	assert_content(AT("out.folded"), "old 1\n");
	assert_int_equal(outfile_commit(&o), 0);
	assert_content(AT("out.folded"), "new 2\n");
	assert_int_equal(count_entries(dir, ""), 1);
}

static void test_abort_leaves_no_temp_file(void **state)
{
	struct outfile o;

	(void)state;
	write_file(AT("kept.folded"), "old 1\n", 0644);
	assert_int_equal(outfile_open(&o, AT("kept.folded")), 0);
	fputs("half a profile", o.f);
	outfile_abort(&o);
	assert_int_equal(count_entries(dir, ".pywalk-"), 0);
	assert_content(AT("kept.folded"), "old 1\n");

	assert_int_equal(outfile_open(&o, AT("new.folded")), 0);
	outfile_abort(&o);
	assert_int_equal(count_entries(dir, ""), 1);
}

static void test_exit_removes_pending_temp_file(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct outfile o;

		if (outfile_open(&o, AT("out.folded")))
			_exit(2);
		fputs("half a profile", o.f);
		exit(0); /* neither commit nor abort: the exit path must clean up */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(count_entries(dir, ""), 0);
}

static void test_commit_replaces_symlink_planted_after_open(void **state)
{
	struct outfile o;
	struct stat st;

	(void)state;
	write_file(AT("victim"), VICTIM_TEXT, 0600);
	assert_int_equal(outfile_open(&o, AT("out.folded")), 0);
	assert_int_equal(symlink(AT("victim"), AT("out.folded")), 0);
	fputs("profile 1\n", o.f);
	assert_int_equal(outfile_commit(&o), 0);
	assert_content(AT("victim"), VICTIM_TEXT);
	assert_int_equal(lstat(AT("out.folded"), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_content(AT("out.folded"), "profile 1\n");
}

/* The one entry of d whose name contains part, in buf */
static void find_entry(const char *d, const char *part, char *buf, size_t size)
{
	DIR *dp = opendir(d);
	struct dirent *e;

	assert_non_null(dp);
	buf[0] = '\0';
	while ((e = readdir(dp)))
		if (strstr(e->d_name, part))
			snprintf(buf, size, "%s/%s", d, e->d_name);
	closedir(dp);
	assert_true(buf[0]);
}

static void test_commit_refuses_a_replaced_temp_file(void **state)
{
	char tmp[PATH_MAX];
	struct outfile o;
	struct stat st;

	(void)state;
	write_file(AT("victim"), VICTIM_TEXT, 0600);
	assert_int_equal(outfile_open(&o, AT("out.folded")), 0);
	find_entry(dir, ".pywalk-", tmp, sizeof(tmp));
	/* someone who can write the directory moves our file away and plants a link */
	assert_int_equal(rename(tmp, AT("stolen")), 0);
	assert_int_equal(symlink(AT("victim"), tmp), 0);
	fputs("profile 1\n", o.f);
	assert_int_equal(outfile_commit(&o), -ESTALE);
	assert_content(AT("victim"), VICTIM_TEXT);
	assert_int_equal(lstat(AT("out.folded"), &st), -1);
	/* not ours any more: left where it is */
	assert_int_equal(lstat(tmp, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
}

static void test_stdout_names(void **state)
{
	struct outfile o;

	(void)state;
	assert_int_equal(outfile_open(&o, "-"), 0);
	assert_ptr_equal(o.f, stdout);
	assert_int_equal(outfile_commit(&o), 0);
	assert_int_equal(outfile_open(&o, "/dev/stdout"), 0);
	assert_ptr_equal(o.f, stdout);
	assert_int_equal(outfile_commit(&o), 0);
}

static void test_fifo_without_reader_fails_at_once(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	assert_int_equal(mkfifo(AT("fifo"), 0600), 0);
	/* in a child that SIGALRM kills, so a hang fails this test and not the whole run */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct outfile o;
		int err;

		alarm(5);
		err = outfile_open(&o, AT("fifo"));
		_exit(err == -ENXIO ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		fail_msg("outfile_open hung on a FIFO without a reader (killed by signal %d)",
			 WTERMSIG(status));
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(count_entries(dir, ""), 1);
}

static void test_fifo_with_reader_is_written_in_place(void **state)
{
	char buf[64] = "";
	struct outfile o;
	struct stat st;
	int reader, flags;

	(void)state;
	assert_int_equal(mkfifo(AT("fifo"), 0600), 0);
	reader = open(AT("fifo"), O_RDONLY | O_NONBLOCK);
	assert_true(reader >= 0);
	assert_int_equal(outfile_open(&o, AT("fifo")), 0);
	flags = fcntl(fileno(o.f), F_GETFL);
	assert_int_equal(flags & O_NONBLOCK, 0); /* writes must block, not fail with EAGAIN */
	assert_true(fcntl(fileno(o.f), F_GETFD) & FD_CLOEXEC);
	fputs("through the fifo 1\n", o.f);
	assert_int_equal(outfile_commit(&o), 0);
	assert_int_equal(read(reader, buf, sizeof(buf) - 1), 19);
	assert_string_equal(buf, "through the fifo 1\n");
	close(reader);
	assert_int_equal(lstat(AT("fifo"), &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(count_entries(dir, ""), 1);
}

static void test_dev_null_is_written_in_place(void **state)
{
	struct stat before, st, after;
	struct outfile o;

	(void)state;
	assert_int_equal(stat("/dev/null", &before), 0);
	assert_int_equal(outfile_open(&o, "/dev/null"), 0);
	assert_int_equal(fstat(fileno(o.f), &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(st.st_rdev, before.st_rdev);
	assert_true(fcntl(fileno(o.f), F_GETFD) & FD_CLOEXEC);
	fputs("gone 1\n", o.f);
	assert_int_equal(outfile_commit(&o), 0);
	assert_int_equal(lstat("/dev/null", &after), 0);
	assert_true(S_ISCHR(after.st_mode));
	assert_int_equal(after.st_ino, before.st_ino);
	assert_int_equal(count_entries("/dev", ".pywalk-"), 0);
}

static void test_dir_symlink_of_other_user_is_refused(void **state)
{
	struct outfile o;

	(void)state;
	skip_unless_root();
	assert_int_equal(mkdir(AT("real"), 0700), 0);
	assert_int_equal(symlink(AT("real"), AT("link")), 0);
	assert_int_equal(lchown(AT("link"), NOBODY, NOBODY), 0);
	assert_int_equal(outfile_open(&o, AT("link/out.folded")), -EPERM);
	outfile_abort(&o);
	assert_int_equal(count_entries(AT("real"), ""), 0);

	/* also when reached through a trusted link, and relative to the working directory */
	assert_int_equal(symlink("link", AT("root-link")), 0);
	assert_int_equal(chdir(dir), 0);
	assert_int_equal(outfile_open(&o, "root-link/./out.folded"), -EPERM);
	outfile_abort(&o);
	assert_int_equal(count_entries(AT("real"), ""), 0);
}

static void test_dir_symlink_of_root_is_followed(void **state)
{
	struct outfile o;

	(void)state;
	skip_unless_root();
	assert_int_equal(mkdir(AT("real"), 0700), 0);
	assert_int_equal(mkdir(AT("real/sub"), 0700), 0);
	/* absolute, relative and chained links, like /var/run -> /run */
	assert_int_equal(symlink(AT("real"), AT("abs")), 0);
	assert_int_equal(symlink("abs/sub", AT("rel")), 0);
	assert_int_equal(outfile_open(&o, AT("abs/out.folded")), 0);
	fputs("a 1\n", o.f);
	assert_int_equal(outfile_commit(&o), 0);
	assert_content(AT("real/out.folded"), "a 1\n");

	assert_int_equal(chdir(dir), 0);
	assert_int_equal(outfile_open(&o, "rel/../sub/out.folded"), 0);
	fputs("b 1\n", o.f);
	assert_int_equal(outfile_commit(&o), 0);
	assert_content(AT("real/sub/out.folded"), "b 1\n");

	assert_int_equal(outfile_open(&o, "plain.folded"), 0);
	fputs("c 1\n", o.f);
	assert_int_equal(outfile_commit(&o), 0);
	assert_content(AT("plain.folded"), "c 1\n");
}

static void test_fd_is_close_on_exec(void **state)
{
	struct outfile o;

	(void)state;
	assert_int_equal(outfile_open(&o, AT("out.folded")), 0);
	assert_true(fcntl(fileno(o.f), F_GETFD) & FD_CLOEXEC);
	outfile_abort(&o);
}

static void test_directory_and_socket_are_refused(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct outfile o;
	int s;

	(void)state;
	assert_int_equal(outfile_open(&o, dir), -EISDIR);
	outfile_abort(&o);

	s = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(s >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", dir);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_true(outfile_open(&o, AT("sock")) < 0);
	outfile_abort(&o);
	close(s);
	assert_int_equal(count_entries(dir, ""), 1);
}

static void test_missing_directory_fails(void **state)
{
	struct outfile o;

	(void)state;
	assert_int_equal(outfile_open(&o, AT("no/such/out.folded")), -ENOENT);
	outfile_abort(&o);
	assert_int_equal(count_entries(dir, ""), 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_symlink_at_last_component_is_refused),
		T(test_temp_file_mode_honours_umask),
		T(test_existing_file_untouched_until_commit),
		T(test_abort_leaves_no_temp_file),
		T(test_exit_removes_pending_temp_file),
		T(test_commit_replaces_symlink_planted_after_open),
		T(test_commit_refuses_a_replaced_temp_file),
		T(test_stdout_names),
		T(test_fifo_without_reader_fails_at_once),
		T(test_fifo_with_reader_is_written_in_place),
		T(test_dev_null_is_written_in_place),
		T(test_dir_symlink_of_other_user_is_refused),
		T(test_dir_symlink_of_root_is_followed),
		T(test_fd_is_close_on_exec),
		T(test_directory_and_socket_are_refused),
		T(test_missing_directory_fails),
	};
#undef T

	return cmocka_run_group_tests_name("outfile", tests, NULL, NULL);
}
