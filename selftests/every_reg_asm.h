/*
 * Assembly text for tests of what a probe leaves in every register: a
 * function saves the callee-saved registers (EVERY_REG_SAVE), keeps its
 * output array in %r15, gives each other register a value of its own
 * (EVERY_REG_SET, then `mov $0xeeee,%r14` and a compare that sets the
 * flags, where each test places its site), then stores them all
 * (EVERY_REG_STORE) into out[0..15]: %rax %rbx %rcx %rdx %rsi %rdi %rbp,
 * %r8-%r14, %rsp, the flags; and returns.
 */
#ifndef DJP_SELFTESTS_EVERY_REG_ASM_H
#define DJP_SELFTESTS_EVERY_REG_ASM_H

#define EVERY_REG_SAVE                                                                             \
	"	push %rbx\n"                                                                        \
	"	push %rbp\n"                                                                        \
	"	push %r12\n"                                                                        \
	"	push %r13\n"                                                                        \
	"	push %r14\n"                                                                        \
	"	push %r15\n"

/* 13 instructions of 7 bytes */
#define EVERY_REG_SET                                                                              \
	"	mov $0x1111,%rax\n"                                                                 \
	"	mov $0x2222,%rbx\n"                                                                 \
	"	mov $0x3333,%rcx\n"                                                                 \
	"	mov $0x4444,%rdx\n"                                                                 \
	"	mov $0x5555,%rsi\n"                                                                 \
	"	mov $0x6666,%rdi\n"                                                                 \
	"	mov $0x7777,%rbp\n"                                                                 \
	"	mov $0x8888,%r8\n"                                                                  \
	"	mov $0x9999,%r9\n"                                                                  \
	"	mov $0xaaaa,%r10\n"                                                                 \
	"	mov $0xbbbb,%r11\n"                                                                 \
	"	mov $0xcccc,%r12\n"                                                                 \
	"	mov $0xdddd,%r13\n"

#define EVERY_REG_STORE                                                                            \
	"	mov %rax,0(%r15)\n"                                                                 \
	"	mov %rbx,8(%r15)\n"                                                                 \
	"	mov %rcx,16(%r15)\n"                                                                \
	"	mov %rdx,24(%r15)\n"                                                                \
	"	mov %rsi,32(%r15)\n"                                                                \
	"	mov %rdi,40(%r15)\n"                                                                \
	"	mov %rbp,48(%r15)\n"                                                                \
	"	mov %r8,56(%r15)\n"                                                                 \
	"	mov %r9,64(%r15)\n"                                                                 \
	"	mov %r10,72(%r15)\n"                                                                \
	"	mov %r11,80(%r15)\n"                                                                \
	"	mov %r12,88(%r15)\n"                                                                \
	"	mov %r13,96(%r15)\n"                                                                \
	"	mov %r14,104(%r15)\n"                                                               \
	"	mov %rsp,112(%r15)\n"                                                               \
	"	pushfq\n"                                                                           \
	"	pop %rax\n"                                                                         \
	"	mov %rax,120(%r15)\n"                                                               \
	"	pop %r15\n"                                                                         \
	"	pop %r14\n"                                                                         \
	"	pop %r13\n"                                                                         \
	"	pop %r12\n"                                                                         \
	"	pop %rbp\n"                                                                         \
	"	pop %rbx\n"                                                                         \
	"	ret\n"

#endif
