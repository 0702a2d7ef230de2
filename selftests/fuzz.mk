# libFuzzer target for the marker record, SDT note and argument parsers,
# built with clang.  Its corpus starts from the sections of the example
# program (first byte: 0 .markers, 1 .note.stapsdt, 2 an argument string).
FUZZ_MARKERS := $(O)/fuzz/fuzz_markers
FUZZ_MARKERS_CORPUS := $(O)/fuzz/corpus-fuzz_markers
FUZZ_MARKERS_SRCS := selftests/fuzz/fuzz_markers.c lib/markers_parse.c lib/argloc.c arch/x86/reg_names.c lib/errline.c

$(FUZZ_MARKERS): $(FUZZ_MARKERS_SRCS) lib/markers.h lib/argloc.h $(O)/selftests/progs/markers_example
	$(Q)tools/check-deps.sh $(DEB_PACKAGES_FUZZ)
	$(call msg,CLANG,$@)
	$(Q)mkdir -p $(@D) $(FUZZ_MARKERS_CORPUS)
	$(Q)$(CLANG) -std=gnu11 -g -O1 -D_GNU_SOURCE -I. -Iinclude -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -o $@ $(FUZZ_MARKERS_SRCS)
	$(Q)for s in markers:0 note.stapsdt:1; do \
		objcopy -O binary --only-section=.$${s%:*} $(O)/selftests/progs/markers_example $(@D)/seed.tmp && \
		{ printf "\\$${s#*:}"; cat $(@D)/seed.tmp; } > $(FUZZ_MARKERS_CORPUS)/seed-$${s%:*}; done; \
		rm -f $(@D)/seed.tmp
	$(Q)printf '\002-4@%%edi 8@-16(%%rbp,%%rax,8) -4@$$5 -4@g+8(%%rip) 1@%%ah' > $(FUZZ_MARKERS_CORPUS)/seed-args

FUZZ_TARGETS += $(FUZZ_MARKERS)
