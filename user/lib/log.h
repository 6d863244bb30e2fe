/* SPDX-License-Identifier: MIT */
/* Diagnostics on stderr with levels; the macros test the level before evaluating
 * their arguments. stdout is reserved for profile data. */
#ifndef PW_LOG_H
#define PW_LOG_H

enum log_level {
	LOG_QUIET = -1,
	LOG_ERR = 0,
	LOG_WARN = 1,
	LOG_INFO = 2,
	LOG_DEBUG = 3,
	LOG_LIBBPF = 4
};

extern int log_level;

/* One message at `level`; under systemd (stderr is the journal's stream) it carries the
 * journal's priority prefix, so that `journalctl -p warning` finds pywalk's warnings. */
void log_printf(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Route libbpf's messages through log_level (-vv shows its debug output). */
void log_hook_libbpf(void);

#define pw_log(lvl, ...)                                           \
	do {                                                       \
		if (log_level >= (lvl))                            \
			log_printf((lvl), "pywalk: " __VA_ARGS__); \
	} while (0)
#define pw_err(...) pw_log(LOG_ERR, __VA_ARGS__)
#define pw_warn(...) pw_log(LOG_WARN, "warning: " __VA_ARGS__)
#define pw_info(...) pw_log(LOG_INFO, __VA_ARGS__)
#define pw_debug(...) pw_log(LOG_DEBUG, "debug: " __VA_ARGS__)

#endif
