# pywalk: plain GNU make. `make` builds build/pywalk; `make test` runs unit and end-to-end
# tests; `make bench` measures; `make fuzz` fuzzes the parsers; `make deb` packages it.
# Everything generated goes under $(O).
# SAN=1: pywalk and the unit tests with ASan and UBSan, in their own output dir by default.
ifeq ($(SAN),1)
O ?= build-san
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
# A sanitizer report must not pass for pywalk's own exit 1 in tests that expect a failure;
# the leak checker stays on (exit 23): pywalk frees what it allocates.
SAN_ENV := ASAN_OPTIONS=exitcode=86 UBSAN_OPTIONS=exitcode=86:print_stacktrace=1
endif
O ?= build
CLANG ?= clang
BPFTOOL ?= bpftool
LLVM_STRIP ?= llvm-strip
CC ?= cc
PYTHON ?= /usr/bin/python3
PREFIX ?= /usr/local
SYSTEMD_UNIT_DIR ?= /etc/systemd/system
ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

WERROR ?= $(if $(CI),-Werror,)
CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Wshadow -Wmissing-prototypes -Wstrict-prototypes -Wformat=2 -Wundef \
	-Wvla $(WERROR)
# BPF programs and global subprograms (verified on their own, so never static) have no
# prototypes by design: the BPF build leaves that warning out.
BPF_WARN := $(filter-out -Wmissing-prototypes,$(WARN))
PKG_CFLAGS := $(shell pkg-config --cflags libbpf libelf libdw libmicrohttpd libcurl liblzma 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs libbpf libelf libdw libmicrohttpd libcurl liblzma 2>/dev/null || \
	echo -lbpf -lelf -ldw -lmicrohttpd -lcurl -llzma) -lz -lpthread -lstdc++
USER_CFLAGS := -std=gnu11 $(WARN) $(CFLAGS) $(SAN_FLAGS) -Ibpf -Iuser -I$(O) $(PKG_CFLAGS) -MMD -MP
# libbpf's usdt.bpf.h includes <linux/errno.h>, whose <asm/errno.h> lives in the host's
# multiarch include directory, which -target bpf does not search.
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
BPF_SYS_INCLUDES := $(if $(MULTIARCH),-idirafter /usr/include/$(MULTIARCH),)
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Ivmlinux -Ibpf $(BPF_WARN) \
	$(BPF_SYS_INCLUDES)

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

# One folder per stage (user/README.md); includes name the folder: "lib/util.h".
USER_DIRS := $(sort $(dir $(wildcard user/*/*.c)))
USER_SRCS := $(wildcard user/*/*.c)
USER_OBJS := $(patsubst user/%.c,$(O)/user/%.o,$(USER_SRCS))
LIB_OBJS := $(filter-out $(O)/user/cmd/main.o,$(USER_OBJS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(O)/tests/%,$(UNIT_SRCS))

.PHONY: all check test test-long e2e soak format-check bench install deb clean lint format deps interpreters demo \
	fuzz fuzz-smoke fuzz-seeds
.DELETE_ON_ERROR:
.SECONDARY:

all: $(O)/pywalk

$(O)/pywalk.bpf.o: bpf/pywalk.bpf.c $(wildcard bpf/*.h) vmlinux/vmlinux.h | $(O)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(O)/pywalk.skel.h: $(O)/pywalk.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name pywalk_bpf > $@

$(O)/user/%.o: user/%.c $(O)/pywalk.skel.h | $(patsubst %/,$(O)/%,$(USER_DIRS))
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) -c $< -o $@

# The HTML writer's page, embedded so a profile is one file that needs nothing else.
$(O)/flame_html.h: user/output/assets/flame.html | $(O)
	$(call msg,GEN,$@)
	$(Q)cd user/output/assets && xxd -i flame.html > $(abspath $@).tmp
	$(Q)sed 's/^unsigned/static const unsigned/' $@.tmp > $@ && rm -f $@.tmp
$(O)/user/output/out_html.o: $(O)/flame_html.h
# The SVG flame graph's script, embedded the same way.
$(O)/flame_svg_js.h: user/output/assets/flame_svg.js | $(O)
	$(call msg,GEN,$@)
	$(Q)cd user/output/assets && xxd -i flame_svg.js > $(abspath $@).tmp
	$(Q)sed 's/^unsigned/static const unsigned/' $@.tmp > $@ && rm -f $@.tmp
$(O)/user/output/out_svg.o: $(O)/flame_svg_js.h

# Syscall names and numbers of this architecture, for trace's syscalls:sys_enter_NAME
# probes (they go by number through the raw sys_enter tracepoint: no tracefs needed).
$(O)/syscall_names.h: | $(O)
	$(call msg,GEN,$@)
	$(Q)echo '#include <sys/syscall.h>' | $(CC) -dM -E - | \
		sed -n 's/^#define __NR_\([a-z0-9_]*\) \([0-9][0-9]*\)$$/X(\1, \2)/p' | sort > $@.tmp
	$(Q)test -s $@.tmp && mv $@.tmp $@
$(O)/user/trace/syscalls.o: $(O)/syscall_names.h

$(O)/pywalk: $(USER_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(SAN_FLAGS) $^ $(PKG_LIBS) -lncursesw -o $@

$(O)/tests/test_%: tests/unit/test_%.c $(LIB_OBJS) | $(O)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) -Itests/unit $< $(LIB_OBJS) $(PKG_LIBS) -lncursesw -lcmocka -o $@

$(O) $(O)/tests $(patsubst %/,$(O)/%,$(USER_DIRS)):
	$(Q)mkdir -p $@

check: $(UNIT_BINS)
	$(Q)$(PYTHON) scripts/check-layers.py
	$(Q)$(PYTHON) scripts/check-doc-links.py
	$(Q)set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done

# make test's end-to-end part leaves out the soak and scale cases (marked long): they
# run for minutes each, in make test-long.
E2E_SELECT ?= -m "not long"
e2e: $(O)/pywalk interpreters
	$(Q)$(SAN_ENV) PYWALK=$(abspath $(O)/pywalk) $(PYTHON) -m pytest -ra tests/e2e \
		$(E2E_SELECT) $(PYTEST_ARGS)

# The soak and scale cases alone (tests/README.md), at the lengths make test once ran them.
test-long: $(O)/pywalk interpreters
	$(Q)$(MAKE) --no-print-directory e2e E2E_SELECT='-m long'

# The soak test alone and long (tests/README.md): pywalk's memory under code-object and
# process churn, and the agent's under --all with churn, SOAK_SECONDS a case (make
# test-long runs them for 40 s a case, the agent's for 120 s); figures in
# $(O)/soak.txt.
SOAK_SECONDS ?= 600
soak: $(O)/pywalk
	$(Q)rm -f $(O)/soak.txt; SOAK_SECONDS=$(SOAK_SECONDS) SOAK_REPORT=$(abspath $(O)/soak.txt) \
		PYWALK=$(abspath $(O)/pywalk) $(PYTHON) -m pytest -ra tests/e2e/test_soak.py \
		tests/e2e/test_agent_ops.py::test_agent_soak_rss_and_fds_flat \
		tests/e2e/test_agent_ops.py::test_agent_soak_names_churn_rss_flat \
		$(PYTEST_ARGS); s=$$?; grep -v '^  RSS' $(O)/soak.txt 2>/dev/null; exit $$s

# Debian unstable's 3.13-3.15 and CPython 3.14.7 (default and free-threaded, built from
# ../shared/cpython) for the end-to-end tests, cached under /var/cache/pywalk.
# In CI a failed fetch fails the run; elsewhere those versions are skipped with the reason.
interpreters:
	$(Q)scripts/get-interpreters.sh >/dev/null || { [ -z "$(CI)" ] || exit 1; \
		echo "warning: Debian unstable interpreters unavailable; their tests will skip" >&2; }
	$(Q)CI=$(CI) scripts/get-cpython-release.sh >/dev/null || { [ -z "$(CI)" ] || exit 1; \
		echo "warning: CPython 3.14.7 builds unavailable; their tests will skip" >&2; }

# The one test command (README): installs what it needs, then unit + end-to-end tests.
test:
	$(Q)scripts/install-deps.sh
	$(Q)$(MAKE) --no-print-directory all check e2e

# Build and profile the bundled demo workload (README quickstart).
demo:
	$(Q)scripts/install-deps.sh --build
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/demo.sh

bench: $(O)/pywalk
	$(Q)scripts/bench.sh

# ---- fuzzing: libFuzzer targets over the parsers of target-controlled input ----------------
FUZZ_TARGETS := linetable strdecode debug_offsets elf elfprobe maps escape debuglink demangle
FUZZ_SECONDS ?= 300
FUZZ_SMOKE_SECONDS ?= 20
FUZZ_CFLAGS := -std=gnu11 $(WARN) -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -Ibpf -Iuser -Itests/fuzz $(PKG_CFLAGS) -MMD -MP
# The real modules each target links: the parser and what it calls, never a copy.
FUZZ_MODS_linetable := linetable
FUZZ_MODS_strdecode := symtab linetable htab intern strtab proc util
FUZZ_MODS_debug_offsets := pyver proc util
FUZZ_MODS_elf := elfinfo
FUZZ_MODS_elfprobe := elfprobe util
FUZZ_MODS_maps := proc util
FUZZ_MODS_escape := escape util
FUZZ_MODS_debuglink := debugfile proc util
FUZZ_MODS_demangle := demangle
FUZZ_LIBS_elf := $(shell pkg-config --libs libelf 2>/dev/null || echo -lelf)
FUZZ_LIBS_elfprobe := $(FUZZ_LIBS_elf)
FUZZ_LIBS_debuglink := $(shell pkg-config --libs libdw liblzma zlib 2>/dev/null || \
	echo -ldw -lelf -llzma -lz)
FUZZ_LIBS_demangle := -lstdc++
FUZZ_BINS := $(patsubst %,$(O)/fuzz/fuzz_%,$(FUZZ_TARGETS))

# a module by name (linetable) is user/<its folder>/linetable.c
fuzz_objs = $(patsubst user/%.c,$(O)/fuzz/obj/%.o,$(foreach m,$(1),$(wildcard user/*/$(m).c)))

$(O)/fuzz/obj/%.o: user/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -c $< -o $@

define FUZZ_RULE
$(O)/fuzz/fuzz_$(1): tests/fuzz/fuzz_$(1).c $(call fuzz_objs,$(FUZZ_MODS_$(1))) \
		| $(O)/fuzz/obj
	$$(call msg,LINK,$$@)
	$$(Q)$$(CLANG) $$(FUZZ_CFLAGS) $$(filter %.c %.o,$$^) $$(FUZZ_LIBS_$(1)) -o $$@
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call FUZZ_RULE,$(t))))

$(O)/fuzz/obj:
	$(Q)mkdir -p $@

# Each target for FUZZ_SECONDS over a scratch copy of tests/fuzz/corpus/<target>; crash
# inputs go to $(O)/fuzz/crashes.
fuzz: $(FUZZ_BINS)
	$(Q)tests/fuzz/run.sh $(O)/fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# What CI runs: every target briefly.
fuzz-smoke: $(FUZZ_BINS)
	$(Q)tests/fuzz/run.sh $(O)/fuzz $(FUZZ_SMOKE_SECONDS) $(FUZZ_TARGETS)

# Regenerate the committed seed corpora from real data (interpreters, binaries, /proc).
fuzz-seeds:
	$(Q)$(PYTHON) tests/fuzz/make_seeds.py

install: $(O)/pywalk
	install -D -m 0755 $(O)/pywalk $(DESTDIR)$(PREFIX)/bin/pywalk
	install -D -m 0644 doc/pywalk.1 $(DESTDIR)$(PREFIX)/share/man/man1/pywalk.1
	install -d $(DESTDIR)$(SYSTEMD_UNIT_DIR)
	sed 's|/usr/local/bin/pywalk|$(PREFIX)/bin/pywalk|' doc/pywalk-agent.service \
		> $(DESTDIR)$(SYSTEMD_UNIT_DIR)/pywalk-agent.service
	chmod 0644 $(DESTDIR)$(SYSTEMD_UNIT_DIR)/pywalk-agent.service
	@# the operator's settings are never overwritten by a reinstall
	test -e $(DESTDIR)/etc/pywalk/agent.conf || \
		install -D -m 0640 doc/agent.conf $(DESTDIR)/etc/pywalk/agent.conf
	install -d -m 0750 $(DESTDIR)/var/lib/pywalk

# A Debian package of what `install` installs (doc/packaging.md). Its version is the one
# `pywalk --version` prints.
VERSION := $(shell sed -n 's/^\#define PYWALK_VERSION "\(.*\)"$$/\1/p' user/lib/pywalk.h)
DEB_MAINTAINER ?= pywalk maintainers <maintainers@users.noreply.a-seed-36d0eb24.example>
deb: $(O)/pywalk
	$(call msg,DEB,$(O)/pywalk_$(VERSION)_$(shell dpkg --print-architecture).deb)
	$(Q)scripts/build-deb.sh $(O) $(VERSION) '$(DEB_MAINTAINER)' >/dev/null

deps:
	$(Q)scripts/install-deps.sh

lint:
	$(Q)$(MAKE) --no-print-directory clean
	$(Q)$(MAKE) --no-print-directory WERROR=-Werror all check

# The C sources in .clang-format's style (the code as it is written: tabs, 100 columns);
# vmlinux.h and the generated line-table vectors are not ours to format.
FORMAT_SRCS = $(wildcard bpf/*.[ch] user/*/*.[ch] bench/*.[ch] tests/fuzz/*.[ch]) \
	$(filter-out tests/unit/linetable_vectors.h,$(wildcard tests/unit/*.[ch]))
format:
	$(Q)clang-format -i $(FORMAT_SRCS)

# What CI runs: any line out of style fails, with the file and the line.
format-check:
	$(Q)clang-format --dry-run --Werror $(FORMAT_SRCS)

clean:
	rm -rf $(O)

-include $(USER_OBJS:.o=.d) $(wildcard $(O)/tests/*.d $(O)/fuzz/*.d $(O)/fuzz/obj/*/*.d)

-include bench/bench.mk
