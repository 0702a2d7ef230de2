# Shared objects for the engine's dlopen/dlclose tests.
DSOS := $(O)/selftests/libdjp_dltest.so
$(O)/selftests/libdjp_dltest.so: selftests/dso/dltest.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -fPIC -shared -o $@ $<
# The same library in another version, for the tests of a file replaced
# on disk while mapped.
DSOS += $(O)/selftests/libdjp_dltest_renamed.so
$(O)/selftests/libdjp_dltest_renamed.so: selftests/dso/dltest_renamed.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -fPIC -shared -o $@ $<
# libdjp_dltop.so needs libdjp_dldep.so: a dlclose of the one unloads both.
DSOS += $(O)/selftests/libdjp_dldep.so $(O)/selftests/libdjp_dltop.so
$(O)/selftests/libdjp_dldep.so: selftests/dso/dldep.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -fPIC -shared -o $@ $<
$(O)/selftests/libdjp_dltop.so: selftests/dso/dltop.c $(O)/selftests/libdjp_dldep.so include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -fPIC -shared -o $@ $< -L$(@D) -ldjp_dldep -Wl,-rpath,'$$ORIGIN'
CHECK_DEPS += $(DSOS)
# Objects whose code uses only legacy SSE, and AVX-512, for the full
# trampoline's vector-width tests.
VEC_DSOS := $(O)/selftests/libdjp_vec_sse.so $(O)/selftests/libdjp_vec_avx512.so
$(O)/selftests/libdjp_vec_%.so: selftests/dso/vec_%.c selftests/vec_site.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -fPIC -shared -o $@ $<
CHECK_DEPS += $(VEC_DSOS)
