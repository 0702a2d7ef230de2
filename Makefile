# djprobe: one plain Makefile.  Sources are found by folder, so a new file in
# lib/, kernel/ or arch/x86/ joins the library, a new selftests/*.c joins the
# test runner, and a new selftests/progs/*.c, examples/*.c or bench/*.c
# becomes a program of its own.  Folders that need more add a *.mk fragment.
#
#   make            the static and shared library and the djp tool
#   make check      build and run every selftest (TAP, "N passed, N failed")
#   make demo       build and run the example under djprobe
#   make bench      the side-by-side benchmark table
#   make fuzz       every libFuzzer target for FUZZ_SECONDS (default 60) each
#   make stress DURATION=600   the long concurrency stress
#   make install PREFIX=/usr/local
#   make kmod       djprobe.ko against KDIR (default: the running kernel's)
#   make kcheck     the kernel selftests in a QEMU guest (KERNEL=debug or marked, KVM=0)
#   make kbench     the in-kernel benchmark table, in the same guest (make
#                   bench runs it too)
#   V=1             show full command lines

PREFIX ?= /usr/local
O := build
CC := gcc
CXX := g++
CLANG ?= clang
FUZZ_SECONDS ?= 60
DURATION ?= 10

DEB_PACKAGES := gcc g++ make pkg-config libelf-dev libdw-dev liburcu-dev libzydis-dev clang libbpf-dev
# What make check runs besides, real programs with SDT probes: python3 (an
# injection test), PostgreSQL 15 (pgbench under djp trace, every backend);
# and bpftrace, the second count those tests compare with and the oracle's
# other tracer; libc6-dbg, the DWARF that names the parameters of the C
# library's functions the oracle compares.  A test whose package is missing
# fails, naming it.
DEB_PACKAGES_CHECK := python3 postgresql-15 bpftrace libc6-dbg
# and python3.11-dbg, the DWARF of python3.11 itself (by build-id), which
# a typed access through python's own structures reads.
DEB_PACKAGES_CHECK += python3.11-dbg
# and man-db (with groff-base), which renders the man pages with --warnings.
DEB_PACKAGES_CHECK += man-db groff-base
# and what reads the timelines djp trace writes: python3-jsonschema checks
# Perfetto's JSON against its schema, chromium renders the summary page.
DEB_PACKAGES_CHECK += python3-jsonschema chromium
# babeltrace2 and its Python bindings, which read the CTF traces djp writes.
DEB_PACKAGES_CHECK += babeltrace2 python3-bt2
DEB_PACKAGES_FUZZ := clang libclang-rt-14-dev
DEB_PACKAGES_BENCH := valgrind postgresql-15

ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-6s %s\n' $(1) $(2)
endif

WARN := -Wall -Wextra -Werror -Wno-unused-parameter
BASE_CFLAGS := -std=gnu11 -g -O2 $(WARN) -D_GNU_SOURCE -Iinclude -I.
LIB_CFLAGS := $(BASE_CFLAGS) -fPIC -fvisibility=hidden -DDJP_BUILDING_LIB
CFLAGS ?=
LDLIBS_LIB := -lelf -ldw -lZydis -lpthread -ldl
# djp's own: libbpf, for the kernel's uprobes (tools/djp/uprobe/)
LDLIBS_DJP := -lbpf

LIB_SRCS := $(sort $(wildcard lib/*.c kernel/*.c kernel/agent/*.c arch/x86/*.c))
LIB_ASM := $(sort $(wildcard arch/x86/*.S))
LIB_OBJS := $(LIB_SRCS:%.c=$(O)/%.o) $(LIB_ASM:%.S=$(O)/%.o)
# The library's version, here only: the shared library's file name and
# SONAME, and djprobe.pc.  MAJOR changes when the ABI breaks.
VERSION := 0.1.0
MAJOR := $(firstword $(subst ., ,$(VERSION)))
LIB_A := $(O)/libdjprobe.a
# The usual chain, in the build tree as installed: libdjprobe.so (to link
# with -ldjprobe, or to preload) -> libdjprobe.so.MAJOR (the SONAME, what a
# linked program loads) -> libdjprobe.so.VERSION (the file).
LIB_SONAME := libdjprobe.so.$(MAJOR)
LIB_SO_FILE := $(O)/libdjprobe.so.$(VERSION)
LIB_SO_MAJOR := $(O)/$(LIB_SONAME)
LIB_SO := $(O)/libdjprobe.so

# tools/djp/script/ goes three folders deep (run/builtins/)
# (a .bpf.c is a BPF program, compiled by its folder's fragment)
DJP_SRCS := $(filter-out %.bpf.c,$(sort $(wildcard tools/djp/*.c tools/djp/*/*.c tools/djp/*/*/*.c tools/djp/*/*/*/*.c)))
DJP_OBJS := $(DJP_SRCS:%.c=$(O)/%.o)
DJP := $(O)/djp

TEST_SRCS := $(sort $(wildcard selftests/*.c))
TEST_OBJS := $(TEST_SRCS:%.c=$(O)/%.o)
SELFTESTS := $(O)/selftests/djp-selftests

PROG_SRCS := $(sort $(wildcard selftests/progs/*.c))
PROGS := $(PROG_SRCS:selftests/progs/%.c=$(O)/selftests/progs/%) \
	 $(PROG_SRCS:selftests/progs/%.c=$(O)/selftests/progs/%-O0)
EXAMPLE_SRCS := $(sort $(wildcard examples/*.c))
EXAMPLES := $(EXAMPLE_SRCS:examples/%.c=$(O)/examples/%)
BENCH_SRCS := $(sort $(wildcard bench/*.c))
BENCHES := $(BENCH_SRCS:bench/%.c=$(O)/bench/%)

DEPS_STAMP := $(O)/.deps-ok

# djp(1), djprobe(3), djprobe-markers(7): each installed in the section its
# name ends with; and djp's bash completion.
MAN_PAGES := $(sort $(wildcard docs/man/*.[1-9]))
# man djp_connect finds djprobe(3): a .so page for each function it names
MAN3_LINKS := djp_connect djp_connect_at djp_disconnect djp_hit_name djp_hit_nargs djp_hit_arg \
	djp_hit_site djp_hit_reg djp_agent_start
COMPLETION := tools/completion/djp.bash

all: $(LIB_A) $(LIB_SO_FILE) $(LIB_SO) $(DJP)

$(DEPS_STAMP): tools/check-deps.sh
	$(Q)tools/check-deps.sh $(DEB_PACKAGES)
	$(Q)mkdir -p $(@D) && touch $@

$(O)/%.o: %.c | $(DEPS_STAMP)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LIB_CFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(O)/%.o: %.S | $(DEPS_STAMP)
	$(call msg,AS,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LIB_CFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(LIB_A): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# The links are made with the file, and again if one is missing.
lib_so_links = ln -sfn $(notdir $(LIB_SO_FILE)) $(LIB_SO_MAJOR) && ln -sfn $(LIB_SONAME) $(LIB_SO)

$(LIB_SO_FILE): $(LIB_OBJS) djprobe.map
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -static-libgcc -Wl,--version-script=djprobe.map -Wl,-soname,$(LIB_SONAME) -o $@ $(LIB_OBJS) $(LDLIBS_LIB)
	$(Q)$(lib_so_links)

$(LIB_SO): $(LIB_SO_FILE)
	$(Q)$(lib_so_links)

$(DJP): $(DJP_OBJS) $(LIB_A)
	$(call msg,LD,$@)
	$(Q)$(CC) -o $@ $(DJP_OBJS) $(LIB_A) $(LDLIBS_LIB) $(LDLIBS_DJP) -lm

$(SELFTESTS): $(TEST_OBJS) $(LIB_A)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -rdynamic -o $@ $(TEST_OBJS) $(LIB_A) $(LDLIBS_LIB) $(LDLIBS_DJP) -lm

# Target programs for the tests: each built at -O2 and at -O0, linked with
# the library so that they can connect probes to themselves.
$(O)/selftests/progs/%: selftests/progs/%.c $(LIB_A) | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $< $(LIB_A) $(LDLIBS_LIB) -lm
$(O)/selftests/progs/%-O0: selftests/progs/%.c $(LIB_A) | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O0 $(CFLAGS) -o $@ $< $(LIB_A) $(LDLIBS_LIB) -lm

$(O)/examples/%: examples/%.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< -lpthread

$(O)/bench/%: bench/%.c $(LIB_A) | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< $(LIB_A) $(LDLIBS_LIB) -lm

# engine_hits uses the public API only and links the shared library, as a
# program does: its own code is then the program's alone (with the archive
# linked in, the engine's x87 and XSAVE code would be the program's too,
# and the full trampoline would check the x87 stack at its sites).
$(O)/bench/engine_hits: bench/engine_hits.c $(LIB_SO) | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< -L$(O) -ldjprobe -Wl,-rpath,'$$ORIGIN/..' -lm

# Fragments add their own targets and may append to these lists.
CHECK_DEPS := all $(SELFTESTS) $(PROGS) $(EXAMPLES)
BENCH_RUN :=
FUZZ_TARGETS :=
include $(sort $(wildcard */*.mk */*/*.mk))

# ---- The kernel target (docs/KERNEL.md, "Testing in the kernel") ----------
# djprobe.ko (kmod/), the selftest modules (selftests/kmod/) and the bench
# module (bench/kmod/) are built by Kbuild, which writes objects next to the
# sources it is given: it is given a tree of symlinks under $(O), one per
# kernel built against, so the worktree keeps sources only.  The guest
# kernel for kcheck is Debian 12's current 6.1, resolved and fetched by
# selftests/kcheck/host/kernel.sh; the guest is a busybox initramfs that
# runs every test and powers off (selftests/kcheck/init).  KERNEL=marked is
# Debian's 6.1 source with the patch series of kernel-patches/linux-6.1
# (MARK() in the image), built small under $(O)/kcheck/marked and kept;
# its run adds the host's inspection of the image (kcheck/host/vmlinux.sh).
KDIR ?= /lib/modules/$(shell uname -r)/build
KERNEL ?= stock
# 4 vCPUs, or as many as the host has cores for KERNEL=marked: its
# 10,000 patching cycles of sched_switch wait on every vCPU three times a
# batch, which under TCG with more vCPUs than host cores stretches them
# 80-fold (a 4-vCPU guest on 2 cores: 62 ms a cycle, 2 vCPUs: 0.8 ms).
KCHECK_SMP ?= $(if $(filter marked,$(KERNEL)),$(shell n=$$(nproc); [ $$n -lt 4 ] && echo $$n || echo 4),4)
KBENCH_SMP ?= 2
# Milliseconds of each stress phase, and the host's limit on one boot: a
# net for a hung guest, not a measure.  Under TCG a guest's phases stretch
# with the host's load (a stock boot ran past 240 s on a busy 2-core host,
# its stress phases at 114 s where 2 s were asked), so the limit is wide.
KCHECK_DURATION ?= 2000
KCHECK_TIMEOUT ?= $(if $(filter debug,$(KERNEL)),1800,$(if $(filter marked,$(KERNEL)),1800,600))
DEB_PACKAGES_KCHECK := qemu-system-x86 busybox-static
KCHECK := $(O)/kcheck
KCHECK_SCRIPTS := $(sort $(wildcard selftests/kcheck/*.sh))
# Every source of TAP lines that must report: /init, the selftest module,
# each guest script under its own name.
KCHECK_EXPECT := kcheck djp_kselftest $(notdir $(KCHECK_SCRIPTS:.sh=)) $(if $(filter marked,$(KERNEL)),vmlinux)
# The marked kernel's build, when it has been made once: make check runs
# KERNEL=marked then, and never builds that kernel itself.
KMARKED_BUILT := $(wildcard $(KCHECK)/marked/obj/.kcheck-built)

# $(call kbuild,TREE,KDIR,FOLDERS): build the modules of each folder
# against KDIR, in TREE/FOLDER (with / as -) made of symlinks by ktree.sh;
# djprobe.ko's exports are visible to the folders after kmod.
define kbuild
	+$(Q)set -e; for d in $(3); do printf '  %-6s %s\n' KBUILD $$d; t=$(abspath $(1))/$$(echo $$d | tr / -); \
		selftests/kcheck/host/ktree.sh $$d $$t; \
		$(MAKE) --no-print-directory $(if $(filter 1,$(V)),,-s) -C $(2) M=$$t \
		$$([ $$d = kmod ] || echo KBUILD_EXTRA_SYMBOLS=$(abspath $(1))/kmod/Module.symvers) modules; done
endef

kmod:
	@[ -d "$(KDIR)" ] || { echo "djprobe: no kernel build tree at $(KDIR): run make kmod KDIR=/path/to/build, or make kcheck to test in QEMU" >&2; exit 1; }
	@[ -f kmod/Kbuild ] || { echo "djprobe: kmod/Kbuild is missing: there is no djprobe.ko to build" >&2; exit 1; }
	$(call kbuild,$(O),$(KDIR),kmod)
	$(call msg,KMOD,$(O)/kmod/djprobe.ko)

# Resolve and fetch the guest kernel, then go on in a sub-make that knows
# its KDIR and BZIMAGE.
kcheck: $(DJP) $(O)/selftests/progs/kimage_work
kbench: $(DJP)
kcheck kbench:
	$(Q)tools/check-deps.sh $(DEB_PACKAGES_KCHECK)
	$(Q)mkdir -p $(KCHECK) && selftests/kcheck/host/kernel.sh $(KCHECK) $(KERNEL) >$(KCHECK)/kernel-$(KERNEL).env
	+$(Q)$(MAKE) --no-print-directory $@-guest $$(cat $(KCHECK)/kernel-$(KERNEL).env)

KTREE = $(KCHECK)/kbuild-$(KERNEL)

# KERNEL=marked: the image's DWARF goes into the guest too (compressed,
# no code), for kernel.function's parameters by name.
KDEBUG = $(KCHECK)/marked/vmlinux.debug

kcheck-guest:
	$(call kbuild,$(KTREE),$(KDIR),kmod selftests/kmod)
	$(if $(filter marked,$(KERNEL)),$(Q)objcopy --only-keep-debug --compress-debug-sections=zlib $(VMLINUX) $(KDEBUG))
	$(Q)selftests/kcheck/host/initramfs.sh $(KCHECK)/test.cpio.gz selftests/kcheck/init \
		$(KTREE)/kmod/djprobe.ko $(KTREE)/selftests-kmod/djp_kselftest.ko \
		$(KTREE)/selftests-kmod/djp_kmarkers2.ko $(KTREE)/selftests-kmod/djp_kimage.ko \
		$(KCHECK_SCRIPTS) selftests/kcheck/tap.inc $(DJP) $(O)/selftests/progs/kimage_work \
		$(if $(filter marked,$(KERNEL)),$(KDEBUG))
	$(Q)selftests/kcheck/host/qemu.sh $(BZIMAGE) $(KCHECK)/test.cpio.gz $(KCHECK)/test.log \
		$(KCHECK_TIMEOUT) $(KCHECK_SMP) kcheck.mode=test kcheck.duration=$(KCHECK_DURATION) \
		$(if $(filter marked,$(KERNEL)),kcheck.marked=1); \
	status=$$?; \
	$(if $(filter marked,$(KERNEL)),selftests/kcheck/host/vmlinux.sh $(VMLINUX) $(DJP) >>$(KCHECK)/test.log;) \
	awk -v expect="$(KCHECK_EXPECT)" -v status=$$status -f selftests/kcheck/host/summary.awk $(KCHECK)/test.log \
		|| { echo "kcheck: the guest's console is in $(KCHECK)/test.log"; exit 1; }

kbench-guest:
	$(call kbuild,$(KTREE),$(KDIR),kmod bench/kmod)
	$(Q)selftests/kcheck/host/initramfs.sh $(KCHECK)/bench.cpio.gz selftests/kcheck/init \
		$(KTREE)/kmod/djprobe.ko $(KTREE)/bench-kmod/djp_kbench.ko bench/kmod/recorded.sh $(DJP)
	$(Q)selftests/kcheck/host/qemu.sh $(BZIMAGE) $(KCHECK)/bench.cpio.gz $(KCHECK)/bench.log \
		$(KCHECK_TIMEOUT) $(KBENCH_SMP) kcheck.mode=bench; \
	bench/kmod/table.sh $(KCHECK)/bench.log $$?

check: $(CHECK_DEPS)
	$(Q)tools/check-deps.sh $(DEB_PACKAGES_CHECK)
	$(Q)$(SELFTESTS)
	$(Q)$(MAKE) --no-print-directory kcheck
	$(if $(KMARKED_BUILT),$(Q)$(MAKE) --no-print-directory kcheck KERNEL=marked)

demo: all $(EXAMPLES)
	$(Q)examples/demo.sh $(O)

bench: all $(BENCHES) $(BENCH_RUN)
	$(Q)tools/check-deps.sh $(DEB_PACKAGES_BENCH)
	$(Q)bench/run.sh $(O)
	$(Q)$(MAKE) --no-print-directory kbench

fuzz: $(FUZZ_TARGETS)
	$(Q)tools/check-deps.sh $(DEB_PACKAGES_FUZZ)
	$(Q)set -e; for f in $(FUZZ_TARGETS); do n=$$(basename $$f); echo "fuzz: $$n for $(FUZZ_SECONDS) s"; \
		mkdir -p $(O)/fuzz/corpus-$$n $(O)/fuzz/crash-$$n; \
		if ! $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -artifact_prefix=$(O)/fuzz/crash-$$n/ \
			$(O)/fuzz/corpus-$$n selftests/fuzz/regress/$$n >$(O)/fuzz/$$n.log 2>&1; then \
			tail -n 30 $(O)/fuzz/$$n.log; echo "fuzz: $$n failed; the input is in $(O)/fuzz/crash-$$n/"; exit 1; fi; \
		tail -n 3 $(O)/fuzz/$$n.log; done

djprobe.pc: djprobe.pc.in
	$(Q)mkdir -p $(O)
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' $< > $(O)/djprobe.pc

install: all djprobe.pc
	$(Q)install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include/djprobe $(DESTDIR)$(PREFIX)/bin
	$(Q)install -m 644 include/djprobe/*.h $(DESTDIR)$(PREFIX)/include/djprobe/
	$(Q)install -m 644 $(LIB_A) $(DESTDIR)$(PREFIX)/lib/
	$(Q)install -m 755 $(LIB_SO_FILE) $(DESTDIR)$(PREFIX)/lib/
	$(Q)ln -sfn $(notdir $(LIB_SO_FILE)) $(DESTDIR)$(PREFIX)/lib/$(LIB_SONAME)
	$(Q)ln -sfn $(LIB_SONAME) $(DESTDIR)$(PREFIX)/lib/libdjprobe.so
	$(Q)install -m 644 $(O)/djprobe.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/
	$(Q)install -m 755 $(DJP) $(DESTDIR)$(PREFIX)/bin/
	$(Q)for p in $(MAN_PAGES); do s=$${p##*.}; install -d $(DESTDIR)$(PREFIX)/share/man/man$$s && \
		install -m 644 $$p $(DESTDIR)$(PREFIX)/share/man/man$$s/ || exit 1; done
	$(Q)for f in $(MAN3_LINKS); do echo '.so man3/djprobe.3' > $(DESTDIR)$(PREFIX)/share/man/man3/$$f.3 || exit 1; done
	$(Q)install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	$(Q)install -m 644 $(COMPLETION) $(DESTDIR)$(PREFIX)/share/bash-completion/completions/djp

clean:
	rm -rf $(O)

.PHONY: all check demo bench fuzz stress install clean djprobe.pc kmod kcheck kbench kcheck-guest kbench-guest
.SECONDARY:
# (Kbuild's trees and the kernel source under kcheck/ are not make's.)
-include $(shell find $(O) \( -path $(O)/kcheck -o -path '$(O)/*kmod' \) -prune -o -name '*.d' -type f -print 2>/dev/null)
