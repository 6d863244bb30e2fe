/* SPDX-License-Identifier: MIT */
/* C++ symbol names as people read them (libstdc++'s __cxa_demangle, the Itanium ABI's
 * demangler every Debian system has). */
#ifndef PW_DEMANGLE_H
#define PW_DEMANGLE_H

/* A malloc'ed readable form of `sym` ("ns::Class::method(int)"), or NULL when it is not
 * a mangled C++ name (or cannot be demangled): the caller keeps the name as it is. */
char *demangle(const char *sym);

#endif
