# The process lifetime probes' target (test_script_life.c): children of
# fork, children that exec, threads.
LIFE_TARGET := $(O)/selftests/trace_progs/life_target
$(LIFE_TARGET): selftests/trace_progs/life_target.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $< -lpthread
$(LIFE_TARGET)_exec: $(LIFE_TARGET)
	$(Q)cp $< $@
CHECK_DEPS += $(LIFE_TARGET) $(LIFE_TARGET)_exec
