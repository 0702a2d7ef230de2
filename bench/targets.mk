# Target programs that benchmarks run under the tool (not benchmarks
# themselves, so outside build/bench/).  script_compare needs bpftrace:
# `make bench` installs it as root and reports a skipped row otherwise.
BENCH_TARGETS := $(O)/bench-targets/hot $(O)/bench-targets/hot_typed $(O)/bench-targets/hot_threads $(O)/bench-targets/hot_sdt $(O)/bench-targets/threads $(O)/bench-targets/forker
$(O)/bench-targets/%: bench/targets/%.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $<
bench-deps:
	$(Q)tools/check-deps.sh bpftrace >/dev/null 2>&1 || echo "bench: bpftrace is not installed (as root, make bench installs it); its rows are skipped" >&2
# The object with AVX-512 code that engine_hits loads for its worst-case row.
BENCH_DSOS := $(O)/bench-targets/libbench_avx512.so
$(O)/bench-targets/libbench_avx512.so: bench/targets/avx512_site.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -fPIC -shared -o $@ $<
# What arm_functions preloads into python3.11: function("*") over it.
BENCH_DSOS += $(O)/bench-targets/libbench_pyarm.so
$(O)/bench-targets/libbench_pyarm.so: bench/targets/pyarm.c $(LIB_SO) | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -fPIC -shared -o $@ $< -L$(O) -ldjprobe -Wl,-rpath,'$$ORIGIN/..'
# trace_ctf traces the demo server.
BENCH_RUN += $(BENCH_TARGETS) $(BENCH_DSOS) $(O)/examples/reqserver bench-deps
.PHONY: bench-deps
