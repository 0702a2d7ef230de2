# The dispatcher and the read side of the grace periods run inside the lean
# trampoline, which saves no vector state: the compiler must not use a
# vector register in them.
$(O)/kernel/dispatch.o $(O)/kernel/rcu.o: CFLAGS += -mgeneral-regs-only
