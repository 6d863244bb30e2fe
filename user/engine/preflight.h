/* SPDX-License-Identifier: MIT */
/* Checks done before touching the kernel, each with a remedy: privileges and kernel BTF. */
#ifndef PW_PREFLIGHT_H
#define PW_PREFLIGHT_H

#include <stddef.h>

/* 0 when pywalk can load its program; otherwise a negative errno and a sentence in `why`. */
int preflight_check(char *why, size_t why_size);

#endif
