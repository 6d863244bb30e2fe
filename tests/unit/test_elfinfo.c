// SPDX-License-Identifier: MIT
/* elf_read_pyinfo() on small ELF images built here: the Py_Version constant is read from
 * the section that holds it, and a symbol whose 8 bytes do not lie inside a section (an
 * address near 2^64 wrapping the bounds check, found by tests/fuzz/fuzz_elf) reads nothing. */
#define _GNU_SOURCE
#include <elf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "inspect/elfinfo.h"

#define PY_VERSION_3_13 0x030d00f0ull

static const char strtab[] = "\0Py_Version";
static const char shstrtab[] = "\0.rodata\0.symtab\0.strtab\0.shstrtab";

/* ELF header, .rodata (16 bytes at `rodata_addr`, Py_Version's value first), a symbol
 * table with Py_Version at `sym_value`, its string table, the section names, then the
 * section headers. Returns a memfd holding it. */
static int make_elf(uint64_t rodata_addr, uint64_t sym_value)
{
	struct {
		Elf64_Ehdr eh;
		uint8_t pad; /* a byte before .rodata, so a read before it sees something */
		uint8_t rodata[16];
		Elf64_Sym syms[2];
		char strtab[sizeof(strtab)];
		char shstrtab[sizeof(shstrtab)];
		Elf64_Shdr sh[5];
	} __attribute__((packed)) img;
	uint64_t version = PY_VERSION_3_13;
	int fd;

	memset(&img, 0, sizeof(img));
	memcpy(img.eh.e_ident, ELFMAG, SELFMAG);
	img.eh.e_ident[EI_CLASS] = ELFCLASS64;
	img.eh.e_ident[EI_DATA] = ELFDATA2LSB;
	img.eh.e_ident[EI_VERSION] = EV_CURRENT;
	img.eh.e_type = ET_EXEC;
	img.eh.e_machine = EM_X86_64;
	img.eh.e_version = EV_CURRENT;
	img.eh.e_ehsize = sizeof(Elf64_Ehdr);
	img.eh.e_shoff = offsetof(__typeof__(img), sh);
	img.eh.e_shentsize = sizeof(Elf64_Shdr);
	img.eh.e_shnum = 5;
	img.eh.e_shstrndx = 4;
	img.pad = 0xaa;
	memcpy(img.rodata, &version, 8);
	img.syms[1] = (Elf64_Sym){ .st_name = 1,
				   .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT),
				   .st_shndx = 1,
				   .st_value = sym_value,
				   .st_size = 8 };
	memcpy(img.strtab, strtab, sizeof(strtab));
	memcpy(img.shstrtab, shstrtab, sizeof(shstrtab));
	img.sh[1] = (Elf64_Shdr){ .sh_name = 1,
				  .sh_type = SHT_PROGBITS,
				  .sh_flags = SHF_ALLOC,
				  .sh_addr = rodata_addr,
				  .sh_offset = offsetof(__typeof__(img), rodata),
				  .sh_size = sizeof(img.rodata),
				  .sh_addralign = 1 };
	img.sh[2] = (Elf64_Shdr){ .sh_name = 9,
				  .sh_type = SHT_SYMTAB,
				  .sh_offset = offsetof(__typeof__(img), syms),
				  .sh_size = sizeof(img.syms),
				  .sh_link = 3,
				  .sh_info = 1,
				  .sh_addralign = 1,
				  .sh_entsize = sizeof(Elf64_Sym) };
	img.sh[3] = (Elf64_Shdr){ .sh_name = 17,
				  .sh_type = SHT_STRTAB,
				  .sh_offset = offsetof(__typeof__(img), strtab),
				  .sh_size = sizeof(strtab),
				  .sh_addralign = 1 };
	img.sh[4] = (Elf64_Shdr){ .sh_name = 25,
				  .sh_type = SHT_STRTAB,
				  .sh_offset = offsetof(__typeof__(img), shstrtab),
				  .sh_size = sizeof(shstrtab),
				  .sh_addralign = 1 };

	fd = memfd_create("test-elf", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, &img, sizeof(img)), sizeof(img));
	return fd;
}

static uint64_t py_version_of(uint64_t rodata_addr, uint64_t sym_value)
{
	struct elf_pyinfo info;
	int fd = make_elf(rodata_addr, sym_value);

	assert_int_equal(elf_read_pyinfo(fd, &info), 0);
	close(fd);
	return info.py_version;
}

static void test_py_version_is_read_from_its_section(void **state)
{
	(void)state;
	assert_int_equal(py_version_of(0x400000, 0x400000), PY_VERSION_3_13);
	assert_int_equal(py_version_of(0, 0x8), 0); /* 0 is the second word of .rodata */
}

static void test_py_version_outside_every_section_reads_nothing(void **state)
{
	(void)state;
	/* vaddr + 8 wraps to a small number: an unchecked sum would read before .rodata */
	assert_int_equal(py_version_of(0, UINT64_MAX), 0);
	assert_int_equal(py_version_of(0, UINT64_MAX - 3), 0);
	/* straddles the end of the section */
	assert_int_equal(py_version_of(0x400000, 0x400000 + 12), 0);
	/* before it */
	assert_int_equal(py_version_of(0x400000, 0x3ffffc), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_py_version_is_read_from_its_section),
		cmocka_unit_test(test_py_version_outside_every_section_reads_nothing),
	};

	return cmocka_run_group_tests_name("elfinfo", tests, NULL, NULL);
}
