// SPDX-License-Identifier: MIT
/* tracefs: detected by its magic number, mounted when absent, and its events directory
 * read for tracepoint names. */
#define _GNU_SOURCE
#include <dirent.h>
#include <sched.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "trace/tracefs.h"
#include "lib/util.h"

#define TRACEFS_MAGIC_NR 0x74726163

static bool is_tracefs(const char *dir)
{
	struct statfs sf;

	return !statfs(dir, &sf) && sf.f_type == TRACEFS_MAGIC_NR;
}

int tracefs_ensure(bool *mounted, char *why, size_t why_size)
{
	*mounted = false;
	if (is_tracefs(TRACEFS_DIR))
		return 0;
	/* mounted in a mount namespace of pywalk's own, so the host is left as it was: no
	 * mount to undo at exit, none left behind if pywalk is killed (tracepoint ids are
	 * the kernel's, the same from any namespace) */
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		int err = -errno;

		snprintf(why, why_size,
			 "tracefs is not mounted and a private mount namespace to mount it in "
			 "could not be made: %s (mount it: mount -t tracefs tracefs %s)",
			 strerror(-err), TRACEFS_DIR);
		return err;
	}
	if (mount("tracefs", TRACEFS_DIR, "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL)) {
		int err = -errno;

		snprintf(why, why_size,
			 "tracefs is not mounted and mounting it at %s failed: %s (mount it: "
			 "mount -t tracefs tracefs %s)",
			 TRACEFS_DIR, strerror(-err), TRACEFS_DIR);
		return err;
	}
	*mounted = true;
	return 0;
}

struct tp {
	char *cat, *name;
};

static int cmp_tp(const void *a, const void *b)
{
	const struct tp *x = a, *y = b;
	int c = strcmp(x->cat, y->cat);

	return c ? c : strcmp(x->name, y->name);
}

/* Entries of `path` that are directories (events and categories are), not "." or "..". */
static bool is_subdir(const struct dirent *de)
{
	return de->d_name[0] != '.' && (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN);
}

int tracefs_match(const char *category, const char *name,
		  void (*fn)(void *ctx, const char *category, const char *name), void *ctx)
{
	DIR *top = opendir(TRACEFS_DIR "/events");
	struct tp *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int err = 0;

	if (!top)
		return -errno;
	while (!err && (de = readdir(top))) {
		char path[512];
		struct dirent *ev;
		DIR *sub;

		if (!is_subdir(de) || fnmatch(category, de->d_name, 0))
			continue;
		snprintf(path, sizeof(path), TRACEFS_DIR "/events/%s", de->d_name);
		sub = opendir(path);
		if (!sub)
			continue;
		while (!err && (ev = readdir(sub))) {
			if (!is_subdir(ev) || fnmatch(name, ev->d_name, 0))
				continue;
			if (grow_array((void **)&v, &cap, n + 1, sizeof(*v))) {
				err = -ENOMEM;
				break;
			}
			v[n].cat = strdup(de->d_name);
			v[n].name = strdup(ev->d_name);
			if (!v[n].cat || !v[n].name)
				err = -ENOMEM;
			n++;
		}
		closedir(sub);
	}
	closedir(top);
	if (!err && n) /* qsort takes no NULL array, even empty */
		qsort(v, n, sizeof(*v), cmp_tp);
	for (size_t i = 0; i < n; i++) {
		if (!err && fn)
			fn(ctx, v[i].cat, v[i].name);
		free(v[i].cat);
		free(v[i].name);
	}
	free(v);
	return err ? err : (int)n;
}

/* "\tfield:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;": NAME is the last word before the ';'
 * (after any [N] of an array, which makes it no scalar). */
int tracefs_field(const char *category, const char *name, const char *field,
		  struct tracefs_field *out)
{
	char path[600], line[512];
	FILE *f;
	int err = -ENOENT;

	snprintf(path, sizeof(path), TRACEFS_DIR "/events/%s/%s/format", category, name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (err == -ENOENT && fgets(line, sizeof(line), f)) {
		char *decl = strstr(line, "field:"), *semi, *word;
		unsigned int off, size, sgn;
		char *rest;

		if (!decl || !(semi = strchr(decl, ';')))
			continue;
		*semi = 0;
		rest = semi + 1;
		word = strrchr(decl, ' ');
		word = word ? word + 1 : decl + 6;
		if (strcmp(word, field) &&
		    !(strncmp(word, field, strlen(field)) == 0 && word[strlen(field)] == '['))
			continue;
		if (sscanf(rest, " offset:%u; size:%u; signed:%u;", &off, &size, &sgn) != 3)
			return fclose(f), -EINVAL;
		if (strchr(word, '[') || strstr(decl, "__data_loc") ||
		    (size != 1 && size != 2 && size != 4 && size != 8))
			err = -EINVAL;
		else
			err = 0;
		*out = (struct tracefs_field){ .offset = off, .size = size, .is_signed = sgn };
	}
	fclose(f);
	return err;
}
