/* SPDX-License-Identifier: MIT */
/* A synthetic target's memory for the tests of the walkers the BPF side runs (walk.h,
 * async.h): one arena from MEM_BASE, the read hook they are built over (reads past what was
 * allocated fault, and every read is counted), and the stores that lay objects out in it.
 * Included once per test file, before the walker, which then reads through mem_read. */
#ifndef PW_TEST_SYNTH_MEM_H
#define PW_TEST_SYNTH_MEM_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#define MEM_BASE 0x10000000ull
#define MEM_SIZE (1 << 20)
static uint8_t mem[MEM_SIZE];
static uint64_t mem_used;
static int reads;

static int mem_read(void *dst, uint32_t size, uint64_t addr)
{
	reads++;
	if (addr < MEM_BASE || addr + size > MEM_BASE + mem_used || addr + size < addr)
		return -14; /* -EFAULT */
	memcpy(dst, mem + (addr - MEM_BASE), size);
	return 0;
}

#define PW_READ_USER(dst, size, addr) mem_read((dst), (size), (addr))

/* A fresh, zeroed memory. */
static void mem_reset(void)
{
	memset(mem, 0, sizeof(mem));
	mem_used = 0;
	reads = 0;
}

static uint64_t mem_alloc(size_t size)
{
	uint64_t addr = MEM_BASE + mem_used;

	mem_used += (size + 15) & ~15ull;
	assert_true(mem_used <= MEM_SIZE);
	return addr;
}

static void put64(uint64_t addr, uint64_t v)
{
	memcpy(mem + (addr - MEM_BASE), &v, 8);
}

static void put32(uint64_t addr, uint32_t v)
{
	memcpy(mem + (addr - MEM_BASE), &v, 4);
}

static void put8(uint64_t addr, uint8_t v)
{
	mem[addr - MEM_BASE] = v;
}

#endif
