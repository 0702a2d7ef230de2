# A hostile consumer against a recording target (selftests/progs/hostile_ring.c):
# `make fuzz` runs it for FUZZ_SECONDS in each ring mode, besides the
# libFuzzer targets; make check runs it for a second (test_ring_hostile.c).
fuzz: fuzz-hostile
fuzz-hostile: $(O)/selftests/progs/hostile_ring
	$(Q)for m in discard overwrite; do echo "fuzz: hostile consumer, $$m mode, for $(FUZZ_SECONDS) s"; \
		$(O)/selftests/progs/hostile_ring $(FUZZ_SECONDS) $$m || exit 1; done
.PHONY: fuzz-hostile
