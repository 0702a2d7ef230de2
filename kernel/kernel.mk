# The dispatcher runs inside the lean trampoline, which saves no vector
# state: the compiler must not use a vector register in it.
$(O)/kernel/dispatch.o: CFLAGS += -mgeneral-regs-only
