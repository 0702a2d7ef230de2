# libFuzzer target for typed accesses' load programs: the agent's reading
# and running of a LOADS payload, and the tool's reading of the results in
# an event (selftests/fuzz/fuzz_load_prog.c).  Its corpus starts from a
# payload of two programs and an event with two results, one a string
# (selftests/fuzz/regress/fuzz_load_prog).
FUZZ_LOADP := $(O)/fuzz/fuzz_load_prog
FUZZ_LOADP_SRCS := selftests/fuzz/fuzz_load_prog.c lib/load_prog.c lib/proto.c

$(FUZZ_LOADP): $(FUZZ_LOADP_SRCS) lib/load_prog.h lib/load_wire.h lib/ring.h lib/proto.h
	$(Q)tools/check-deps.sh $(DEB_PACKAGES_FUZZ)
	$(call msg,CLANG,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -std=gnu11 -g -O1 -D_GNU_SOURCE -I. -Iinclude -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -o $@ $(FUZZ_LOADP_SRCS)

FUZZ_TARGETS += $(FUZZ_LOADP)
