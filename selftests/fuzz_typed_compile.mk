# libFuzzer target for the compiler of typed accesses: accesses made from
# the input, compiled against struct_target's DWARF, give an error that
# says what, or programs the agent's check accepts
# (selftests/fuzz/fuzz_typed_compile.c; its corpus starts from
# selftests/fuzz/regress/fuzz_typed_compile).
FUZZ_TYPEDC := $(O)/fuzz/fuzz_typed_compile
FUZZ_TYPEDC_SRCS := selftests/fuzz/fuzz_typed_compile.c lib/typed_compile.c lib/load_prog.c lib/proto.c \
	lib/func_params.c lib/param_locs.c lib/dwarf_types.c lib/dwarf_globals.c lib/func_source.c \
	lib/func_symbols.c lib/cxx_name.c lib/func_index.c lib/elf_debug.c lib/errline.c lib/argloc.c lib/mapped_file.c \
	arch/x86/reg_names.c arch/x86/call_conv.c

$(FUZZ_TYPEDC): $(FUZZ_TYPEDC_SRCS) lib/typed_compile.h lib/load_prog.h $(O)/selftests/trace_progs/struct_target
	$(Q)tools/check-deps.sh $(DEB_PACKAGES_FUZZ)
	$(call msg,CLANG,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -std=gnu11 -g -O1 -D_GNU_SOURCE -I. -Iinclude -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -DTYPED_OBJ='"$(abspath $(O))/selftests/trace_progs/struct_target"' \
		-o $@ $(FUZZ_TYPEDC_SRCS) -ldw -lelf

FUZZ_TARGETS += $(FUZZ_TYPEDC)
