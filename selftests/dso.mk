# Shared objects for the engine's dlopen/dlclose tests.
DSOS := $(O)/selftests/libdjp_dltest.so
$(O)/selftests/libdjp_dltest.so: selftests/dso/dltest.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -fPIC -shared -o $@ $<
CHECK_DEPS += $(DSOS)
