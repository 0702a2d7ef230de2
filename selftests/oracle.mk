# The oracle's workloads (selftests/oracle/): programs of ours with fixed
# calls, exceptions and arguments, compared under djp and bpftrace by
# selftests/oracle/oracle.py (test_oracle.c).  Nothing of djprobe in them.
ORACLE_DIR := $(O)/selftests/oracle
ORACLE_PROGS := $(ORACLE_DIR)/func_workload $(ORACLE_DIR)/cxx_workload
$(ORACLE_DIR)/func_workload: selftests/oracle/func_workload.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O2 -g $(CFLAGS) -o $@ $< -ldl
$(ORACLE_DIR)/cxx_workload: selftests/oracle/cxx_workload.cc | $(DEPS_STAMP)
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) -O2 $(CXXFLAGS) -o $@ $<
CHECK_DEPS += $(ORACLE_PROGS)
