# libFuzzer target for the CTF reader that `djp trace --from` runs on a
# trace directory (tools/djp/source/ctf.c).  Its corpus starts from a
# stream of three packets and a metadata of three classes
# (selftests/fuzz/regress/fuzz_ctf).
FUZZ_CTF := $(O)/fuzz/fuzz_ctf
FUZZ_CTF_SRCS := selftests/fuzz/fuzz_ctf.c tools/djp/source/ctf.c tools/djp/output/ctf_metadata.c lib/format.c \
	lib/escape.c

$(FUZZ_CTF): $(FUZZ_CTF_SRCS) tools/djp/output/ctf.h tools/djp/output/ctf_layout.h tools/djp/source/source.h
	$(Q)tools/check-deps.sh $(DEB_PACKAGES_FUZZ)
	$(call msg,CLANG,$@)
	$(Q)mkdir -p $(@D) $(O)/fuzz/corpus-fuzz_ctf
	$(Q)$(CLANG) -std=gnu11 -g -O1 -D_GNU_SOURCE -I. -Iinclude -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -o $@ $(FUZZ_CTF_SRCS)

FUZZ_TARGETS += $(FUZZ_CTF)
