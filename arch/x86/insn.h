/*
 * The few x86 instruction bytes the engine writes or expects at a site.
 */
#ifndef DJP_ARCH_X86_INSN_H
#define DJP_ARCH_X86_INSN_H

#include <stdint.h>
#include <string.h>

#define X86_INT3 0xcc
#define X86_JMP_REL32 0xe9
#define X86_JMP_REL32_LEN 5
#define X86_NOP1 0x90

/* nopw 0x0(%rax,%rax,1): the marker site. */
static const uint8_t x86_nop6[6] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 };

/* Is `to` reachable with a rel32 from an instruction of `len` bytes at `from`? */
static inline int x86_rel32_fits(uintptr_t from, unsigned len, uintptr_t to)
{
	int64_t d = (int64_t)(to - (from + len));
	return d >= INT32_MIN && d <= INT32_MAX;
}

/* Write `e9 rel32` for a jump at `at` to `to` into buf[0..4]. */
static inline void x86_encode_jmp(uint8_t *buf, uintptr_t at, uintptr_t to)
{
	int32_t rel = (int32_t)(to - (at + X86_JMP_REL32_LEN));
	buf[0] = X86_JMP_REL32;
	memcpy(buf + 1, &rel, 4);
}

#endif
