// SPDX-License-Identifier: MIT
/* Protobuf wire-format primitives (see pbenc.h for why not protobuf-c). */
#include <errno.h>

#include "output/pbenc.h"

int pb_varint(struct strbuf *sb, uint64_t v)
{
	char buf[10]; /* 64 bits in 7-bit groups */
	size_t n = 0;

	do {
		buf[n++] = (char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return strbuf_add(sb, buf, n);
}

static int pb_tag(struct strbuf *sb, uint32_t field, unsigned int wire_type)
{
	return pb_varint(sb, (uint64_t)field << 3 | wire_type);
}

int pb_uint(struct strbuf *sb, uint32_t field, uint64_t v)
{
	if (!v)
		return sb->err;
	pb_tag(sb, field, PB_VARINT);
	return pb_varint(sb, v);
}

int pb_fixed64(struct strbuf *sb, uint32_t field, uint64_t v)
{
	char buf[8];

	if (!v)
		return sb->err;
	for (int i = 0; i < 8; i++)
		buf[i] = (char)(v >> (8 * i));
	pb_tag(sb, field, PB_I64);
	return strbuf_add(sb, buf, sizeof(buf));
}

int pb_bytes(struct strbuf *sb, uint32_t field, const void *data, size_t len)
{
	pb_tag(sb, field, PB_LEN);
	pb_varint(sb, len);
	return len ? strbuf_add(sb, data, len) : sb->err;
}

int pb_msg(struct strbuf *sb, uint32_t field, const struct strbuf *m)
{
	return m->err ? strbuf_fail(sb, m->err) : pb_bytes(sb, field, m->buf, m->len);
}

int pb_packed(struct strbuf *sb, uint32_t field, const uint64_t *v, size_t n)
{
	size_t len = 0, i;

	if (!n)
		return sb->err;
	/* the payload length comes first, so size the varints before writing them */
	for (i = 0; i < n; i++) {
		uint64_t x = v[i];

		do {
			len++;
			x >>= 7;
		} while (x);
	}
	pb_tag(sb, field, PB_LEN);
	pb_varint(sb, len);
	for (i = 0; i < n && !sb->err; i++)
		pb_varint(sb, v[i]);
	return sb->err;
}
