/*
 * x86-64's register names, for argument locations (lib/argloc.c).
 *
 * An SDT-style argument string ("-4@%edi 8@-16(%rbp)") is printed by the
 * compiler in the target's assembler syntax, so the names of its
 * registers are the arch's: the sixteen general registers under each of
 * their widths (%rax %eax %ax %al, %ah for the second byte of the first
 * four; %r8 %r8d %r8w %r8b), and %rip, which only a memory operand names.
 * lib/argloc.c parses and prints the operands around them; this file maps
 * a name to the register view's number (enum djp_reg), its width and its
 * byte shift, and back.  It is shared with djprobe.ko, where lib/argloc.c
 * parses the module's markers: no allocation, no libc beyond strlen and
 * memcmp.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arch/x86/regs.h"

static const char *const reg64[DJP_REG_COUNT] = {
	"rax", "rcx", "rdx", "rsi", "rdi", "r8",  "r9",	 "r10", "r11",
	"rbx", "rbp", "r12", "r13", "r14", "r15", "rsp", "rip",
};

/* %r8 .. %r15 by their number less 8. */
static const int8_t numbered[8] = { DJP_REG_R8,	 DJP_REG_R9,  DJP_REG_R10, DJP_REG_R11,
				    DJP_REG_R12, DJP_REG_R13, DJP_REG_R14, DJP_REG_R15 };

/* Legacy names of the first eight registers, by width. */
static const struct {
	const char *name;
	int8_t reg;
	uint8_t width, shift;
} legacy[] = {
	{ "eax", DJP_REG_RAX, 4, 0 }, { "ebx", DJP_REG_RBX, 4, 0 }, { "ecx", DJP_REG_RCX, 4, 0 },
	{ "edx", DJP_REG_RDX, 4, 0 }, { "esi", DJP_REG_RSI, 4, 0 }, { "edi", DJP_REG_RDI, 4, 0 },
	{ "ebp", DJP_REG_RBP, 4, 0 }, { "esp", DJP_REG_RSP, 4, 0 }, { "eip", DJP_REG_RIP, 4, 0 },
	{ "ax", DJP_REG_RAX, 2, 0 },  { "bx", DJP_REG_RBX, 2, 0 },  { "cx", DJP_REG_RCX, 2, 0 },
	{ "dx", DJP_REG_RDX, 2, 0 },  { "si", DJP_REG_RSI, 2, 0 },  { "di", DJP_REG_RDI, 2, 0 },
	{ "bp", DJP_REG_RBP, 2, 0 },  { "sp", DJP_REG_RSP, 2, 0 },  { "al", DJP_REG_RAX, 1, 0 },
	{ "bl", DJP_REG_RBX, 1, 0 },  { "cl", DJP_REG_RCX, 1, 0 },  { "dl", DJP_REG_RDX, 1, 0 },
	{ "sil", DJP_REG_RSI, 1, 0 }, { "dil", DJP_REG_RDI, 1, 0 }, { "bpl", DJP_REG_RBP, 1, 0 },
	{ "spl", DJP_REG_RSP, 1, 0 }, { "ah", DJP_REG_RAX, 1, 8 },  { "bh", DJP_REG_RBX, 1, 8 },
	{ "ch", DJP_REG_RCX, 1, 8 },  { "dh", DJP_REG_RDX, 1, 8 },
};

static bool span_is(const char *s, size_t len, const char *word)
{
	return strlen(word) == len && memcmp(s, word, len) == 0;
}

int djp_reg_from_name(const char *name, size_t len, uint8_t *shift, uint8_t *width)
{
	uint8_t sh = 0, w = 8;
	int reg = -1;

	if (len && name[0] == '%') {
		name++;
		len--;
	}
	for (int i = 0; i < DJP_REG_COUNT && reg < 0; i++)
		if (span_is(name, len, reg64[i]))
			reg = i;
	for (size_t i = 0; i < sizeof(legacy) / sizeof(legacy[0]) && reg < 0; i++)
		if (span_is(name, len, legacy[i].name)) {
			reg = legacy[i].reg;
			w = legacy[i].width;
			sh = legacy[i].shift;
		}
	/* %r8 .. %r15 with an optional d/w/b suffix. */
	if (reg < 0 && len >= 2 && name[0] == 'r' && name[1] >= '0' && name[1] <= '9') {
		size_t i = 1;
		unsigned n = 0;
		while (i < len && name[i] >= '0' && name[i] <= '9' && n < 100)
			n = n * 10 + (unsigned)(name[i++] - '0');
		if (n >= 8 && n <= 15 && i >= len - 1) {
			if (i == len)
				reg = numbered[n - 8];
			else if (name[i] == 'd' || name[i] == 'w' || name[i] == 'b') {
				reg = numbered[n - 8];
				w = name[i] == 'd' ? 4 : name[i] == 'w' ? 2 : 1;
			}
		}
	}
	if (reg < 0)
		return -1;
	if (shift)
		*shift = sh;
	if (width)
		*width = w;
	return reg;
}

const char *djp_reg_name(int reg)
{
	return reg >= 0 && reg < DJP_REG_COUNT ? reg64[reg] : NULL;
}

const char *djp_reg_name_sized(int reg, unsigned width, unsigned shift)
{
	static const char *const r8[8][3] = {
		{ "r8d", "r8w", "r8b" },     { "r9d", "r9w", "r9b" },	  { "r10d", "r10w", "r10b" },
		{ "r11d", "r11w", "r11b" },  { "r12d", "r12w", "r12b" }, { "r13d", "r13w", "r13b" },
		{ "r14d", "r14w", "r14b" },  { "r15d", "r15w", "r15b" },
	};
	if (shift)
		width = 1; /* %ah and friends exist only at one byte */
	if (width == 8)
		return reg64[reg];
	for (int n = 0; n < 8; n++)
		if (numbered[n] == reg)
			return r8[n][width == 4 ? 0 : width == 2 ? 1 : 2];
	for (size_t i = 0; i < sizeof(legacy) / sizeof(legacy[0]); i++)
		if (legacy[i].reg == reg && legacy[i].width == width && legacy[i].shift == shift)
			return legacy[i].name;
	return reg64[reg];
}
