/* SPDX-License-Identifier: MIT */
/* Protocol-buffers wire encoding, the few primitives pprof's profile.proto and OTLP's
 * profiles need: varints, fixed 64-bit integers, length-delimited fields (strings, nested
 * messages) and packed repeated integers.
 * Hand-written on purpose: these ~80 lines replace protobuf-c's runtime, a generated
 * .pb-c.{c,h} pair per schema, a code generator at build time and a per-message struct
 * graph to fill and free, for write-only message types. Decoding is left to the consumers
 * (tested against `go tool pprof` and `protoc --decode`). */
#ifndef PW_PBENC_H
#define PW_PBENC_H

#include <stddef.h>
#include <stdint.h>

#include "lib/escape.h"

/* Wire types (protobuf encoding spec). */
enum { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2 };

/* All append to sb and return its error (strbuf's first error: 0 when all went in). */
int pb_varint(struct strbuf *sb, uint64_t v);
/* A varint field; proto3 scalars equal to 0 are left out, as encoders do. int64 values are
 * passed as their two's complement (pprof uses no sint64). */
int pb_uint(struct strbuf *sb, uint32_t field, uint64_t v);
/* A fixed64 field (little-endian, 8 bytes; OTLP's timestamps); 0 is left out as above. */
int pb_fixed64(struct strbuf *sb, uint32_t field, uint64_t v);
/* A length-delimited field: a string (kept even when empty: string_table[0] must be "") or an
 * already encoded nested message. */
int pb_bytes(struct strbuf *sb, uint32_t field, const void *data, size_t len);
/* An encoded nested message as a length-delimited field; m's own error instead, if it has
 * one (a message missing part of itself is not written). */
int pb_msg(struct strbuf *sb, uint32_t field, const struct strbuf *m);
/* A packed repeated varint field (proto3's default for repeated scalars); nothing if n == 0. */
int pb_packed(struct strbuf *sb, uint32_t field, const uint64_t *v, size_t n);

#endif
