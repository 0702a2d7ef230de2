# libFuzzer target for the marker-log reader the tool runs on memory the
# traced process writes.  Its corpus starts from a log with two records
# (selftests/fuzz/regress/fuzz_marker_log).
FUZZ_MLOG := $(O)/fuzz/fuzz_marker_log
FUZZ_MLOG_CORPUS := $(O)/fuzz/corpus-fuzz_marker_log
FUZZ_MLOG_SRCS := selftests/fuzz/fuzz_marker_log.c lib/marker_log.c lib/proto.c

$(FUZZ_MLOG): $(FUZZ_MLOG_SRCS) lib/marker_log.h lib/proto.h
	$(Q)tools/check-deps.sh $(DEB_PACKAGES_FUZZ)
	$(call msg,CLANG,$@)
	$(Q)mkdir -p $(@D) $(FUZZ_MLOG_CORPUS)
	$(Q)$(CLANG) -std=gnu11 -g -O1 -D_GNU_SOURCE -I. -Iinclude -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -o $@ $(FUZZ_MLOG_SRCS)

FUZZ_TARGETS += $(FUZZ_MLOG)
