# libFuzzer target for the probe-script parser and checker: the script
# engine without its command line (cli.c), live sources (live.c, klive.c) and the
# lookup of a site's function (site_function.c), which
# need a process.
FUZZ_SCRIPT := $(O)/fuzz/fuzz_script
FUZZ_SCRIPT_SRCS := selftests/fuzz/fuzz_script.c lib/format.c lib/escape.c lib/marker_match.c lib/cxx_name.c lib/func_symbols.c lib/func_source.c lib/func_params.c lib/func_index.c lib/param_locs.c lib/dwarf_types.c arch/x86/call_conv.c lib/elf_debug.c lib/errline.c lib/mapped_file.c \
	lib/markers_elf.c lib/markers_parse.c lib/argloc.c arch/x86/reg_names.c tools/djp/line_out.c \
	lib/typed_compile.c lib/load_prog.c lib/proto.c lib/dwarf_globals.c lib/addr_line.c tools/djp/kfunc_dwarf.c \
	$(filter-out tools/djp/script/cli.c tools/djp/script/live.c tools/djp/script/klive.c tools/djp/script/site_function.c,\
		$(sort $(wildcard tools/djp/script/*.c tools/djp/script/*/*.c tools/djp/script/*/*/*.c)))

$(FUZZ_SCRIPT): $(FUZZ_SCRIPT_SRCS)
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -g -O1 -std=gnu11 -D_GNU_SOURCE -Iinclude -I. -o $@ $(FUZZ_SCRIPT_SRCS) -lelf -ldw

FUZZ_TARGETS += $(FUZZ_SCRIPT)
