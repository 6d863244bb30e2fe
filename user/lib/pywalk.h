/* SPDX-License-Identifier: MIT */
/* What every part of pywalk may name: the version its outputs carry and the exit codes
 * its commands return. */
#ifndef PW_PYWALK_H
#define PW_PYWALK_H

#define PYWALK_VERSION "0.1.0"

enum exit_code { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

#endif
