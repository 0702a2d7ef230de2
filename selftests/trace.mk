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
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $< -lpthread -ldl
$(TRACE_PROGS_DIR)/trace_target-O0: selftests/trace_progs/trace_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O0 $(CFLAGS) -o $@ $< -lpthread -ldl
# A shared object with a marker of its own, for the dlopen test.
$(TRACE_PLUGIN): selftests/trace_progs/trace_plugin.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -fPIC -shared -o $@ $<
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
# A program with a plain SDT probe and nothing of djprobe (user_string()).
SDT_TARGET := $(TRACE_PROGS_DIR)/sdt_target
$(SDT_TARGET): selftests/trace_progs/sdt_target.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $<
CHECK_DEPS += $(SDT_TARGET)
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
