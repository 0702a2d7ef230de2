# The probe-script engine (tools/djp/script/) outside the djp tool: a
# standalone driver, build/selftests/djp-script, that the golden tests
# (selftests/test_script_golden.c) and the script benchmark run.
SCRIPT_SRCS := $(sort $(wildcard tools/djp/script/*.c))
# (the live source, live.c, needs the tracing client: it is only in djp)
SCRIPT_OBJS := $(filter-out $(O)/tools/djp/script/cli.o $(O)/tools/djp/script/live.o,$(SCRIPT_SRCS:%.c=$(O)/%.o))
DJP_SCRIPT := $(O)/selftests/djp-script

$(O)/tools/djp/script/cli-standalone.o: tools/djp/script/cli.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LIB_CFLAGS) $(CFLAGS) -DDJP_SCRIPT_STANDALONE -MMD -MP -c -o $@ $<

$(DJP_SCRIPT): $(SCRIPT_OBJS) $(O)/tools/djp/script/cli-standalone.o $(LIB_A)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -o $@ $(SCRIPT_OBJS) $(O)/tools/djp/script/cli-standalone.o $(LIB_A) $(LDLIBS_LIB) -lm

# The same figure as bench/script_compare's first row, alone (that row is
# what `make bench` shows, in its table).
script-bench: $(DJP_SCRIPT)
	$(Q)$(DJP_SCRIPT) --bench-events 20000000 -e 'global c; probe process.mark("*") { c[$$$$name]++ }' | tail -n 1

CHECK_DEPS += $(DJP_SCRIPT)
.PHONY: script-bench
