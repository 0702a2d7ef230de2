# The long concurrency stress: `make stress DURATION=600` runs for DURATION
# seconds in all: the engine stress for a quarter with membarrier, a quarter
# with the TLB shootdown, the injection stress (selftests/test_inject_hostile.c:
# injections into programs whose threads sit in signal handlers, on short
# stacks, under seccomp filters, with signals arriving) for a quarter, and
# for the last the kernel's uprobe armed and disarmed at a site four
# threads that block every signal run (selftests/test_trace_uprobe.c).
# (trace.mk, read after this file, has the rules of the targets' programs.)
stress: $(PROGS) all $(SELFTESTS) $(O)/selftests/trace_progs/hostile_target $(O)/selftests/trace_progs/libtrace_plugin.so \
	$(O)/selftests/trace_progs/trapsite_target
	$(Q)$(O)/selftests/progs/engine_stress $$(( $(DURATION) / 4 ))
	$(Q)DJP_SYNC=shootdown $(O)/selftests/progs/engine_stress $$(( $(DURATION) / 4 ))
	$(Q)DJP_STRESS_SECONDS=$$(( $(DURATION) / 4 )) $(SELFTESTS) -t inject_hostile_stress
	$(Q)DJP_STRESS_SECONDS=$$(( $(DURATION) / 4 )) $(SELFTESTS) -t trace_uprobe_stress_attach_detach_under_load
