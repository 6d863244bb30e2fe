// SPDX-License-Identifier: MIT
/* libFuzzer target: elf_read_pyinfo() over an arbitrary file, held in a memfd so libelf
 * reads it the way it reads a mapped binary (ELF_C_READ_MMAP on a real fd). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "inspect/elfinfo.h"
#include "fuzz.h"

static int memfd = -1;

/* Py_Version is read out of a PROGBITS section: its 8 bytes must lie inside the file range
 * of one (an independent look at the section headers, with libelf). */
static bool in_some_section(const uint8_t *data, size_t size, uint64_t value)
{
	Elf_Scn *scn = NULL;
	bool found = false;
	Elf *elf;

	elf = elf_memory((char *)data, size);
	if (!elf)
		return false;
	while (!found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || sh.sh_offset > size ||
		    sh.sh_size > size - sh.sh_offset)
			continue;
		for (uint64_t i = 0; !found && i + 8 <= sh.sh_size; i++)
			found = !memcmp(data + sh.sh_offset + i, &value, 8);
	}
	elf_end(elf);
	return found;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_pyinfo info, again;
	uint8_t *copy;
	int err;

	if (memfd < 0) {
		memfd = memfd_create("fuzz-elf", MFD_CLOEXEC);
		FUZZ_CHECK(memfd >= 0, "memfd_create: %s", strerror(errno));
		elf_version(EV_CURRENT);
	}
	FUZZ_CHECK(!ftruncate(memfd, 0), "ftruncate: %s", strerror(errno));
	FUZZ_CHECK(pwrite(memfd, data, size, 0) == (ssize_t)size, "pwrite: %s", strerror(errno));

	err = elf_read_pyinfo(memfd, &info);
	FUZZ_CHECK(err == 0 || err == -ENOEXEC, "error %d", err);
	FUZZ_CHECK(fcntl(memfd, F_GETFD) >= 0, "fd closed by the reader");
	FUZZ_CHECK(elf_read_pyinfo(memfd, &again) == err &&
			   (err || !memcmp(&info, &again, sizeof(info))),
		   "not deterministic");
	if (err)
		return 0;
	FUZZ_CHECK(!(info.first_load_vaddr & 0xfff), "first PT_LOAD %#llx not page-aligned",
		   (unsigned long long)info.first_load_vaddr);
	if (info.py_version) {
		/* elf_memory may convert the image in place: give it a copy */
		copy = malloc(size);
		FUZZ_CHECK(copy, "malloc");
		memcpy(copy, data, size);
		FUZZ_CHECK(in_some_section(copy, size, info.py_version),
			   "Py_Version %#llx read from outside every section",
			   (unsigned long long)info.py_version);
		free(copy);
	}
	return 0;
}
