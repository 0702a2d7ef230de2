# The long concurrency stress: `make stress DURATION=600` runs the engine
# stress for DURATION seconds in all, half with membarrier, half with freeze.
stress: $(PROGS)
	$(Q)$(O)/selftests/progs/engine_stress $$(( $(DURATION) / 2 ))
	$(Q)DJP_SYNC=freeze $(O)/selftests/progs/engine_stress $$(( $(DURATION) / 2 ))
