# Targets of the `djp trace` and agent tests.  They get the agent the way a
# traced command does, by LD_PRELOAD of libdjprobe.so, so they must not link
# any of libdjprobe.a (which would put a second engine in the process: the
# library's dlopen interposer alone pulls it in).  Built at -O2 and -O0.
TRACE_PROGS_DIR := $(O)/selftests/trace_progs
TRACE_TARGETS := $(TRACE_PROGS_DIR)/trace_target $(TRACE_PROGS_DIR)/trace_target-O0
TRACE_PLUGIN := $(TRACE_PROGS_DIR)/libtrace_plugin.so

$(TRACE_PROGS_DIR)/trace_target: selftests/trace_progs/trace_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $< -lpthread -ldl -Wl,-z,now
$(TRACE_PROGS_DIR)/trace_target-O0: selftests/trace_progs/trace_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O0 $(CFLAGS) -o $@ $< -lpthread -ldl -Wl,-z,now
# A shared object with a marker of its own, for the dlopen test.
$(TRACE_PLUGIN): selftests/trace_progs/trace_plugin.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -fPIC -shared -o $@ $<
# One whose constructor loads that one: a dlopen inside a dlopen.
$(TRACE_PROGS_DIR)/libnested_plugin.so: selftests/trace_progs/nested_plugin.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -fPIC -shared -o $@ $<
CHECK_DEPS += $(TRACE_PROGS_DIR)/libnested_plugin.so
# The injection tests' target with busy threads (no libdjprobe, as above),
# and one linked statically: no loader to ask.
BUSY_TARGET := $(TRACE_PROGS_DIR)/busy_target
$(BUSY_TARGET): selftests/trace_progs/busy_target.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $< -lpthread
$(BUSY_TARGET)-static: selftests/trace_progs/busy_target.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -static -o $@ $< -lpthread
CHECK_DEPS += $(BUSY_TARGET) $(BUSY_TARGET)-static
# The in-target aggregation tests' target: threads hitting markers as fast
# as they can (no libdjprobe, as above).
AGG_TARGET := $(TRACE_PROGS_DIR)/agg_target
$(AGG_TARGET): selftests/trace_progs/agg_target.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $< -lpthread
CHECK_DEPS += $(AGG_TARGET)
# The same at function, return and statement points: threads calling
# functions as fast as they can, nothing of djprobe.
AGGCALL_TARGET := $(TRACE_PROGS_DIR)/aggcall_target
$(AGGCALL_TARGET): selftests/trace_progs/aggcall_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $< -lpthread
CHECK_DEPS += $(AGGCALL_TARGET)
# Threads (and children of fork) that block every signal, SIGTRAP too.
SIGBLOCK_TARGET := $(TRACE_PROGS_DIR)/sigblock_target
$(SIGBLOCK_TARGET): selftests/trace_progs/sigblock_target.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $< -lpthread
CHECK_DEPS += $(SIGBLOCK_TARGET)
# A C++ target: libstdc++'s SDT probes, for the provider patterns.
TRACE_CXX := $(TRACE_PROGS_DIR)/trace_cxx
$(TRACE_CXX): selftests/trace_progs/trace_cxx.cc include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) -O2 -g -Iinclude $(CXXFLAGS) -o $@ $<
$(TRACE_CXX)_sdt: selftests/trace_progs/trace_cxx.cc include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) -O2 -g -Iinclude -DTRACE_CXX_SDT_ONLY $(CXXFLAGS) -o $@ $<
CHECK_DEPS += $(TRACE_TARGETS) $(TRACE_PLUGIN) $(TRACE_CXX) $(TRACE_CXX)_sdt
# C++ types for typed access: classes, namespaces, references.
TYPED_CXX := $(TRACE_PROGS_DIR)/typed_cxx
$(TYPED_CXX): selftests/trace_progs/typed_cxx.cc | $(DEPS_STAMP)
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) -O2 -g $(CXXFLAGS) -o $@ $<
CHECK_DEPS += $(TYPED_CXX)
# A program with a plain SDT probe and nothing of djprobe (user_string()).
SDT_TARGET := $(TRACE_PROGS_DIR)/sdt_target
$(SDT_TARGET): selftests/trace_progs/sdt_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $<
CHECK_DEPS += $(SDT_TARGET)
# An SDT probe no jump can reach (the kernel's uprobe serves it).
TRAPSITE_TARGET := $(TRACE_PROGS_DIR)/trapsite_target
$(TRAPSITE_TARGET): selftests/trace_progs/trapsite_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $< -lpthread
CHECK_DEPS += $(TRAPSITE_TARGET)
# The script corpus's target (selftests/scripts/corpus): markers of a small
# server with a fixed workload.
CORPUS_TARGET := $(TRACE_PROGS_DIR)/corpus_target
$(CORPUS_TARGET): selftests/trace_progs/corpus_target.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $<
CHECK_DEPS += $(CORPUS_TARGET)
# The instruction probes' target: no marker, nothing of djprobe.
FUNC_TARGET := $(TRACE_PROGS_DIR)/func_target
$(FUNC_TARGET): selftests/trace_progs/func_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $<
CHECK_DEPS += $(FUNC_TARGET)
# The timeline tests' target (Perfetto's JSON, the summary page): threads
# with names, nested calls, marker pairs.
TIMELINE_TARGET := $(TRACE_PROGS_DIR)/timeline_target
$(TIMELINE_TARGET): selftests/trace_progs/timeline_target.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $< -lpthread
CHECK_DEPS += $(TIMELINE_TARGET)
# The typed values' target: signed, unsigned and pointer parameters and
# return values, SDT probes without a format; _mark: a marker with a long %s.
TYPED_TARGET := $(TRACE_PROGS_DIR)/typed_target
$(TYPED_TARGET): selftests/trace_progs/typed_target.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $<
$(TYPED_TARGET)_mark: selftests/trace_progs/typed_target.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -DTYPED_MARKER -o $@ $<
CHECK_DEPS += $(TYPED_TARGET) $(TYPED_TARGET)_mark
# Arguments read by the ABI: functions built with no debug information at
# all (-g0, and what the C library's start files bring stripped), their
# symbols kept, as in a program whose DWARF was stripped.
DWARFLESS_TARGET := $(TRACE_PROGS_DIR)/dwarfless_target
$(DWARFLESS_TARGET): selftests/trace_progs/dwarfless_target.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -g0 -o $@ $<
	$(Q)strip --strip-debug $@
CHECK_DEPS += $(DWARFLESS_TARGET)
# Structures passed and returned by value, -O2 and -O0.
BYVAL_TARGET := $(TRACE_PROGS_DIR)/byval_target
$(BYVAL_TARGET): selftests/trace_progs/byval_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $<
$(BYVAL_TARGET)-O0: selftests/trace_progs/byval_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O0 $(CFLAGS) -o $@ $<
CHECK_DEPS += $(BYVAL_TARGET) $(BYVAL_TARGET)-O0
# Two static functions of one name in two objects of one program, each
# with its own structure: the file built twice, with SAMENAME_B and
# without, and linked.
SAMENAME_TARGET := $(TRACE_PROGS_DIR)/samename_target
$(SAMENAME_TARGET): selftests/trace_progs/samename_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -DSAMENAME_B -c -o $@-b.o $<
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $< $@-b.o
CHECK_DEPS += $(SAMENAME_TARGET)
# Globals and file statics of every type @var reads, with DWARF.
GLOBALS_TARGET := $(TRACE_PROGS_DIR)/globals_target
$(GLOBALS_TARGET): selftests/trace_progs/globals_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $<
CHECK_DEPS += $(GLOBALS_TARGET)
# The user backtraces' target: call chains, a qsort comparator, an SDT probe
# that stays int3; -O2 -g with frame pointers, and without (the default).
USTACK_TARGET := $(TRACE_PROGS_DIR)/ustack_target
$(USTACK_TARGET): selftests/trace_progs/ustack_target.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 -g -fno-omit-frame-pointer $(CFLAGS) -o $@ $<
$(USTACK_TARGET)-nofp: selftests/trace_progs/ustack_target.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 -g -fomit-frame-pointer $(CFLAGS) -o $@ $<
CHECK_DEPS += $(USTACK_TARGET) $(USTACK_TARGET)-nofp
# The line probes' target: -O0, where a line's code has several rows.
LINE_TARGET := $(TRACE_PROGS_DIR)/line_target
$(LINE_TARGET): selftests/trace_progs/line_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O0 $(CFLAGS) -o $@ $<
CHECK_DEPS += $(LINE_TARGET)
# One thread calling malloc and free, and dlopen: whose hits are whose.
MALLOC_TARGET := $(TRACE_PROGS_DIR)/malloc_target
$(MALLOC_TARGET): selftests/trace_progs/malloc_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $< -ldl
CHECK_DEPS += $(MALLOC_TARGET)
# Every kind of argument location, with known values: SDT probes (1-byte
# nops), the same as djprobe markers, and not position independent.
ARGKINDS_TARGET := $(TRACE_PROGS_DIR)/argkinds_target
$(ARGKINDS_TARGET): selftests/trace_progs/argkinds_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $<
$(ARGKINDS_TARGET)-mark: selftests/trace_progs/argkinds_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 -DARGKINDS_MARK $(CFLAGS) -o $@ $<
$(ARGKINDS_TARGET)-nopie: selftests/trace_progs/argkinds_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 -fno-pie -no-pie $(CFLAGS) -o $@ $<
CHECK_DEPS += $(ARGKINDS_TARGET) $(ARGKINDS_TARGET)-mark $(ARGKINDS_TARGET)-nopie
# The same with handlers of the in-process API: full, lean and int3.
$(TRACE_PROGS_DIR)/argkinds_engine: selftests/trace_progs/argkinds_target.c $(LIB_A) | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 -DARGKINDS_ENGINE $(CFLAGS) -o $@ $< $(LIB_A) $(LDLIBS_LIB) -lm
$(TRACE_PROGS_DIR)/argkinds_engine-mark: selftests/trace_progs/argkinds_target.c $(LIB_A) | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 -DARGKINDS_ENGINE -DARGKINDS_MARK $(CFLAGS) -o $@ $< $(LIB_A) $(LDLIBS_LIB) -lm
CHECK_DEPS += $(TRACE_PROGS_DIR)/argkinds_engine $(TRACE_PROGS_DIR)/argkinds_engine-mark
# The fault forwarder's target: SIGSEGV handlers of every kind, a %s marker.
FAULT_TARGET := $(TRACE_PROGS_DIR)/fault_target
$(FAULT_TARGET): selftests/trace_progs/fault_target.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $< -lpthread
CHECK_DEPS += $(FAULT_TARGET)
# The unloaded-objects backtrace test's target (nothing of djprobe) and
# the library it calls the plugin through.
USYM_TARGET := $(TRACE_PROGS_DIR)/usym_target
$(USYM_TARGET): selftests/trace_progs/usym_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $< -ldl
$(TRACE_PROGS_DIR)/libusym_caller.so: selftests/trace_progs/usym_caller.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -fPIC -shared -o $@ $<
CHECK_DEPS += $(USYM_TARGET) $(TRACE_PROGS_DIR)/libusym_caller.so
# The hostile injection tests' target (selftests/test_inject_hostile.c): it
# takes the agent's list of system calls for its seccomp allow-list.
HOSTILE_TARGET := $(TRACE_PROGS_DIR)/hostile_target
$(HOSTILE_TARGET): selftests/trace_progs/hostile_target.c kernel/agent/agent_syscalls.c kernel/agent/agent_syscalls.h \
		include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ selftests/trace_progs/hostile_target.c kernel/agent/agent_syscalls.c \
		-lpthread -ldl -Wl,-z,now
CHECK_DEPS += $(HOSTILE_TARGET)
HOSTILE_PLUGIN := $(TRACE_PROGS_DIR)/libhostile_plugin.so
$(HOSTILE_PLUGIN): selftests/trace_progs/hostile_plugin.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -fPIC -shared -o $@ $<
CHECK_DEPS += $(HOSTILE_PLUGIN)
# A server whose workers (forked, exec'd, a grandchild, one non-dumpable)
# exist before the attach: -x's reach into a process's descendants.
KIDS_TARGET := $(TRACE_PROGS_DIR)/kids_target
$(KIDS_TARGET): selftests/trace_progs/kids_target.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $<
CHECK_DEPS += $(KIDS_TARGET)
# Many copies of one program, each telling when it is armed: djp trace -a.
ALL_TARGET := $(TRACE_PROGS_DIR)/all_target
$(ALL_TARGET): selftests/trace_progs/all_target.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $<
CHECK_DEPS += $(ALL_TARGET)
# Vector registers live across lean-trampoline probes (nothing of djprobe).
VECREGS_TARGET := $(TRACE_PROGS_DIR)/vecregs_target
$(VECREGS_TARGET): selftests/trace_progs/vecregs_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $<
CHECK_DEPS += $(VECREGS_TARGET)
# The typed accesses' target: a structure of every kind of member, its own
# oracle; -O2 and -O0 with gcc's DWARF 5, -O2 with DWARF 4, -O2 without.
STRUCT_TARGETS := $(TRACE_PROGS_DIR)/struct_target $(TRACE_PROGS_DIR)/struct_target-O0 \
	$(TRACE_PROGS_DIR)/struct_target-dwarf4 $(TRACE_PROGS_DIR)/struct_target-nodebug
$(TRACE_PROGS_DIR)/struct_target: selftests/trace_progs/struct_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $<
$(TRACE_PROGS_DIR)/struct_target-O0: selftests/trace_progs/struct_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O0 $(CFLAGS) -o $@ $<
$(TRACE_PROGS_DIR)/struct_target-dwarf4: selftests/trace_progs/struct_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 -gdwarf-4 $(CFLAGS) -o $@ $<
# and without DWARF, its types read from another object (@cast(pointer_arg(1), T, PATH))
$(TRACE_PROGS_DIR)/struct_target-nodebug: selftests/trace_progs/struct_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -g0 -o $@ $<
CHECK_DEPS += $(STRUCT_TARGETS)
# A relocatable object with DWARF, as a kernel module is, whose functions'
# parameters tools/djp/kfunc_dwarf.c names (selftests/test_kfunc_dwarf.c).
KPARAMS_OBJ := $(TRACE_PROGS_DIR)/kparams.o
$(KPARAMS_OBJ): selftests/trace_progs/kparams.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -c -o $@ $<
CHECK_DEPS += $(KPARAMS_OBJ)
# The main thread calls pthread_exit and the last worker ends the process
# (test_trace_last_thread.c); nothing of djprobe.
LASTEXIT_TARGET := $(TRACE_PROGS_DIR)/lastexit_target
$(LASTEXIT_TARGET): selftests/trace_progs/lastexit_target.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $< -lpthread -ldl
CHECK_DEPS += $(LASTEXIT_TARGET)
