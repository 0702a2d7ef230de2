# The long concurrency stress: `make stress DURATION=600` runs for DURATION
# seconds in all: the engine stress for a third with membarrier, a third with
# the TLB shootdown, and the injection stress (selftests/test_inject_hostile.c:
# injections into programs whose threads sit in signal handlers, on short
# stacks, under seccomp filters, with signals arriving) for the last third.
# (trace.mk, read after this file, has the rules of the targets' programs.)
stress: $(PROGS) all $(SELFTESTS) $(O)/selftests/trace_progs/hostile_target $(O)/selftests/trace_progs/libtrace_plugin.so
	$(Q)$(O)/selftests/progs/engine_stress $$(( $(DURATION) / 3 ))
	$(Q)DJP_SYNC=shootdown $(O)/selftests/progs/engine_stress $$(( $(DURATION) / 3 ))
	$(Q)DJP_STRESS_SECONDS=$$(( $(DURATION) / 3 )) $(SELFTESTS) -t inject_hostile_stress
