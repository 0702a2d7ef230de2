/*
 * An SDT probe as <sys/sdt.h> writes one, for the programs of the tests and
 * benchmarks that carry plain SDT probes and nothing of djprobe (as
 * PostgreSQL, python and libstdc++ do), without <sys/sdt.h> itself.
 *
 * SDT_NOTE_ASM(provider, name, semaphore, args) is the assembler text of
 * the note of a probe whose nop is at the local label 990 just before it
 * ("990: nop\n" SDT_NOTE_ASM(...)): semaphore is a symbol, or "0" for none;
 * args the argument string ("8@%rdi -4@$5"; in an asm with operands,
 * "8@%0").  SDT_BASE_ASM defines _.stapsdt.base, which every note names,
 * once per object.
 */
#ifndef DJP_SELFTESTS_SDT_NOTE_ASM_H
#define DJP_SELFTESTS_SDT_NOTE_ASM_H

#define SDT_NOTE_ASM(provider, name, semaphore, args)                                                      \
	".pushsection .note.stapsdt,\"?\",@note\n"                                                         \
	".balign 4\n"                                                                                      \
	".4byte 992f-991f, 994f-993f, 3\n"                                                                 \
	"991: .asciz \"stapsdt\"\n"                                                                        \
	"992: .balign 4\n"                                                                                 \
	"993: .8byte 990b\n"                                                                               \
	".8byte _.stapsdt.base\n"                                                                          \
	".8byte " semaphore "\n"                                                                           \
	".asciz \"" provider "\"\n"                                                                        \
	".asciz \"" name "\"\n"                                                                            \
	".asciz \"" args "\"\n"                                                                            \
	"994: .balign 4\n"                                                                                 \
	".popsection\n"

#define SDT_BASE_ASM                                                                                       \
	".ifndef _.stapsdt.base\n"                                                                         \
	".pushsection .stapsdt.base,\"aG\",@progbits,.stapsdt.base,comdat\n"                               \
	".weak _.stapsdt.base\n"                                                                           \
	".hidden _.stapsdt.base\n"                                                                         \
	"_.stapsdt.base: .space 1\n"                                                                       \
	".size _.stapsdt.base, 1\n"                                                                        \
	".popsection\n"                                                                                    \
	".endif\n"

#endif
