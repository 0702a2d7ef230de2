# The flame graphs' target (test_flame.c): known call chains to a marker.
# -O2 without frame pointers: the agent walks the stack by the call-frame
# information.
FLAME_TARGET := $(O)/selftests/trace_progs/flame_target
$(FLAME_TARGET): selftests/trace_progs/flame_target.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 -g -fomit-frame-pointer $(CFLAGS) -o $@ $<
CHECK_DEPS += $(FLAME_TARGET)
