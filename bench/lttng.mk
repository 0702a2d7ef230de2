# The LTTng-UST comparison (bench/lttng/trace_lttng.c).  `make bench` asks
# for liblttng-ust-dev and lttng-tools (installed when run as root); without
# them the program is a stub that prints a row saying so.
TRACE_LTTNG := $(O)/bench/trace_lttng
TRACE_LTTNG_SRCS := bench/lttng/trace_lttng.c bench/lttng/tp.c bench/lttng/tp.h
$(TRACE_LTTNG): $(TRACE_LTTNG_SRCS) $(LIB_A) | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)tools/check-deps.sh liblttng-ust-dev lttng-tools >/dev/null 2>&1 || true
	$(Q)if pkg-config --exists lttng-ust 2>/dev/null; then \
		$(CC) $(BASE_CFLAGS) $(CFLAGS) -Wno-error -DDJP_HAVE_LTTNG -o $@ bench/lttng/trace_lttng.c bench/lttng/tp.c \
			$(LIB_A) $(LDLIBS_LIB) $$(pkg-config --libs lttng-ust) -ldl; \
	else \
		$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ bench/lttng/trace_lttng.c; \
	fi
BENCH_RUN += $(TRACE_LTTNG)
