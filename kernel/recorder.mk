# The recorder runs from the lean trampoline, which saves general registers
# only: the compiler must not give it a vector or x87 instruction.  Nor the
# ring's slow paths it calls there (a thread's first event, a nested record,
# the %s copy): lib/ring.h promises general registers only, and this holds
# the compiler to it.
$(O)/kernel/recorder.o: CFLAGS += -mgeneral-regs-only
$(O)/lib/ring.o: CFLAGS += -mgeneral-regs-only
