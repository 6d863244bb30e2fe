# Build rules for the benchmark tools; included by the top-level Makefile
# (`-include bench/bench.mk`, anywhere after O is set: the bottom is fine), or used as
# `make -f Makefile -f bench/bench.mk TARGET`.
# Uses the top-level Makefile's variables (O, CLANG, BPF_CFLAGS, USER_CFLAGS, LIB_OBJS...).
ifndef PW_BENCH_MK
PW_BENCH_MK := 1
# wherever this is included, `make` alone still builds `all`, not a rule of this file
pw_bench_goal := $(.DEFAULT_GOAL)

BENCH_BIN := $(O)/bench/pwbench
# the modules as the unit tests link them: a new dependency of one never breaks the bench
BENCH_LIB_OBJS := $(LIB_OBJS)

.PHONY: bench-tools
bench-tools: $(BENCH_BIN)

$(O)/bench:
	$(Q)mkdir -p $@

$(O)/bench/floor.bpf.o: bench/floor.bpf.c bench/floor.h vmlinux/vmlinux.h | $(O)/bench
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -Ibench -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(O)/bench/floor.skel.h: $(O)/bench/floor.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name floor_bpf > $@

$(O)/bench/pwbench.o: bench/pwbench.c $(O)/bench/floor.skel.h $(O)/pywalk.skel.h | $(O)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) -Ibench -I$(O)/bench -c $< -o $@

$(BENCH_BIN): $(O)/bench/pwbench.o $(BENCH_LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(SAN_FLAGS) $^ $(PKG_LIBS) -lncursesw -o $@

-include $(O)/bench/pwbench.d

.DEFAULT_GOAL := $(or $(pw_bench_goal),all)
endif
