/* SPDX-License-Identifier: MIT */
/* What kind of code a frame of a stack ran, so every writer marks the frames that are not
 * Python the same way. A stack is root first and mixed: Python frames, then native (C)
 * frames between or below them, kernel frames at the leaf, an off-CPU label last. */
#ifndef PW_FRAME_H
#define PW_FRAME_H

enum frame_kind {
	FRAME_PYTHON = 0, /* a code object: qualname (file:line) */
	FRAME_PSEUDO,	  /* a label pywalk adds ("[off-cpu: sleeping]"): the name alone */
	FRAME_NATIVE,	  /* user-space machine code: symbol or lib+0xOFFSET */
	FRAME_KERNEL,	  /* kernel code: symbol, [unknown]+0xADDR, or [kernel unsymbolized] */
};

/* What follows a frame's name where a format has only names: " [native]", " [kernel]",
 * or "" for Python frames and labels. */
static inline const char *frame_kind_suffix(enum frame_kind k)
{
	return k == FRAME_NATIVE ? " [native]" : k == FRAME_KERNEL ? " [kernel]" : "";
}

/* Is the frame machine code (native or kernel), named by an address in a mapping? */
static inline int frame_kind_is_machine(enum frame_kind k)
{
	return k == FRAME_NATIVE || k == FRAME_KERNEL;
}

#endif
