# The kernel's uprobes as a recording backend (tools/djp/uprobe/): the BPF
# program is compiled by clang for the BPF target and carried inside djp
# (prog_blob.c includes the object with .incbin), and the selftests link
# the tool's side to call it directly (selftests/test_uprobes.c).
UPROBE_DIR := $(O)/tools/djp/uprobe
UPROBE_BPF_OBJ := $(UPROBE_DIR)/record.bpf.o
# asm/types.h is in the host's multiarch folder, which the BPF target
# does not search; freestanding: <stdint.h> is the compiler's own, not
# glibc's, which asks for a 32-bit stub header the BPF target has not.
UPROBE_BPF_CFLAGS := -O2 -g -target bpf -ffreestanding -Wall -Werror -Iinclude -I. \
	-I/usr/include/$(shell $(CC) -print-multiarch)

$(UPROBE_BPF_OBJ): tools/djp/uprobe/record.bpf.c | $(DEPS_STAMP)
	$(call msg,BPF,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(UPROBE_BPF_CFLAGS) -MMD -MP -c -o $@ $<

# The object included is not something gcc's -MMD can see.
$(UPROBE_DIR)/prog_blob.o: tools/djp/uprobe/prog_blob.c $(UPROBE_BPF_OBJ) | $(DEPS_STAMP)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LIB_CFLAGS) $(CFLAGS) -DDJP_UPROBE_BPF_OBJ='"$(UPROBE_BPF_OBJ)"' -MMD -MP -c -o $@ $<

UPROBE_TEST_OBJS := $(UPROBE_DIR)/uprobes.o $(UPROBE_DIR)/prog_blob.o
TEST_OBJS += $(UPROBE_TEST_OBJS)
$(SELFTESTS): $(UPROBE_TEST_OBJS)
# and the target its tests run, which `make check` builds with every other
$(SELFTESTS): | $(O)/selftests/progs/uprobe_target
