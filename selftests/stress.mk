# The long concurrency stress: `make stress DURATION=600` runs the engine
# stress for DURATION seconds in all, half with membarrier, half with the TLB shootdown.
stress: $(PROGS)
	$(Q)$(O)/selftests/progs/engine_stress $$(( $(DURATION) / 2 ))
	$(Q)DJP_SYNC=shootdown $(O)/selftests/progs/engine_stress $$(( $(DURATION) / 2 ))
