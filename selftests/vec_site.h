/*
 * The marker record of a hand-written site (layout: docs/ABI.md), for the
 * selftests whose sites are in assembly: the site is the instruction at
 * local label 990.
 */
#ifndef DJP_SELFTEST_VEC_SITE_H
#define DJP_SELFTEST_VEC_SITE_H

#define DJP_TEST_RECORD(name)                                                                       \
	".pushsection .markers,\"a\",@progbits\n.balign 8\n"                                        \
	"991: .2byte 1\n.2byte 992f-991b\n.byte 6, 0\n.2byte 0\n.8byte 990b-.\n"                   \
	".asciz \"" name "\"\n.asciz \"\"\n.asciz \"\"\n.balign 8, 0\n992:\n.popsection\n"

#endif
