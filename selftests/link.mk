# A program linked against the build tree's shared library as a user would
# link it (-L build -ldjprobe, no rpath), for test_shared_lib.c, which runs
# it with LD_LIBRARY_PATH; and that test's view of the source tree, where it
# reads djprobe.map, docs/ABI.md and the installed headers.
LINKED_PROG := $(O)/selftests/link/linked

$(LINKED_PROG): selftests/link/linked.c $(LIB_SO) | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -std=gnu11 -g -O2 $(WARN) -Iinclude $(CFLAGS) -o $@ $< -L$(O) -ldjprobe

# A library linked with it, preloaded into a program that knows nothing of
# djprobe: libdjprobe.so then comes after libc.
PRELOADED_LIB := $(O)/selftests/link/libpreloaded.so
$(PRELOADED_LIB): selftests/link/preloaded.c $(LIB_SO) | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -std=gnu11 -g -O2 $(WARN) -Iinclude $(CFLAGS) -fPIC -shared -o $@ $< -L$(O) -ldjprobe

$(O)/selftests/test_shared_lib.o: CFLAGS += -DDJP_SRC_DIR='"$(CURDIR)"'

CHECK_DEPS += $(LINKED_PROG) $(PRELOADED_LIB)
