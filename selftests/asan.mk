# The disconnect guarantee under AddressSanitizer (a program of its own).
ASAN_PROGS := $(O)/selftests/asan/disconnect_asan
$(O)/selftests/asan/%: selftests/asan/%.c $(LIB_A) | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -fsanitize=address -fno-omit-frame-pointer -o $@ $< $(LIB_A) $(LDLIBS_LIB)
CHECK_DEPS += $(ASAN_PROGS)
