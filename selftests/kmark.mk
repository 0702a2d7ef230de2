# A relocatable object with markers, compiled the way kernel code is (no
# PIC, the kernel code model, <djprobe/marker.h> in its kernel mode, which
# labels each record), for the ET_REL reader (test_markers_rel.c).  No
# kernel headers: the relocations are those of a module's objects all the
# same.
KMARK_OBJ := $(O)/selftests/kmark/kmark.o

$(KMARK_OBJ): selftests/kmark/kmark.c include/djprobe/marker.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -std=gnu11 -O2 -g -fno-pic -mcmodel=kernel -mno-red-zone -ffreestanding -D__KERNEL__ -Iinclude $(WARN) -c -o $@ $<

CHECK_DEPS += $(KMARK_OBJ)
