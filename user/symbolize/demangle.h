/* SPDX-License-Identifier: MIT */
/* C++ symbol names as people read them (libstdc++'s __cxa_demangle, the Itanium ABI's
 * demangler every Debian system has). */
#ifndef PW_DEMANGLE_H
#define PW_DEMANGLE_H

/* The longest mangled name demangled (libstdc++ 12 itself gives up on longer ones). */
#define DEMANGLE_MAX 1024

/* A malloc'ed readable form of `sym` ("ns::Class::method(int)"), or NULL when it is not
 * a mangled C++ name, is longer than DEMANGLE_MAX or cannot be demangled: the caller
 * keeps the name as it is. */
char *demangle(const char *sym);

#endif
