# The process lifetime probes' target (test_script_life.c): children of
# fork, children that exec, threads.
LIFE_TARGET := $(O)/selftests/trace_progs/life_target
$(LIFE_TARGET): selftests/trace_progs/life_target.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $< -lpthread
$(LIFE_TARGET)_exec: $(LIFE_TARGET)
	$(Q)cp $< $@
CHECK_DEPS += $(LIFE_TARGET) $(LIFE_TARGET)_exec
# Markers hit while threads exit (test_trace_thread_exit.c).
THREAD_EXIT_TARGET := $(O)/selftests/trace_progs/thread_exit_target
$(THREAD_EXIT_TARGET): selftests/trace_progs/thread_exit_target.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $< -lpthread
CHECK_DEPS += $(THREAD_EXIT_TARGET)
# Children of fork between the parent's events (test_script_kids.c).
FORK_MARK_TARGET := $(O)/selftests/trace_progs/fork_mark_target
$(FORK_MARK_TARGET): selftests/trace_progs/fork_mark_target.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $< -lpthread
CHECK_DEPS += $(FORK_MARK_TARGET)

# The thread lifetime probes' target (test_script_threads.c): threads that
# return, exit, are cancelled, fork, and outlive main.
THREAD_LIFE_TARGET := $(O)/selftests/trace_progs/thread_life_target
$(THREAD_LIFE_TARGET): selftests/trace_progs/thread_life_target.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $< -lpthread
CHECK_DEPS += $(THREAD_LIFE_TARGET)
