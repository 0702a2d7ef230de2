/*
 * A kernel function's parameters by register, from DWARF
 * (tools/djp/kfunc_dwarf.c), on a relocatable object built here as a
 * module is (trace_progs/kparams.c): which parameter is in which of the
 * six integer argument registers, how each prints, and how a narrow one's
 * register is cut and extended.  The same code names the parameters of a
 * live kernel's functions (selftests/kcheck/kfunc.sh, in the guest).
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "tools/djp/kfunc_dwarf.c"

static void params(const char *fn, struct kfunc_sig *sig)
{
	char why[256];
	int err = kfunc_file_params(djp_test_path("trace_progs/kparams.o"), fn, sig, why, sizeof(why));
	if (err)
		djp_test_fail(__FILE__, __LINE__, "%s: %d: %s", fn, err, why);
}

static void names_are(const struct kfunc_sig *sig, const char *want)
{
	char got[256] = "";
	size_t len = 0;
	for (unsigned i = 0; i < sig->nargs; i++) /* "-": a register no parameter is named for */
		len += (size_t)snprintf(got + len, sizeof(got) - len, "%s%s", i ? " " : "",
					sig->arg[i].name[0] ? sig->arg[i].name : "-");
	if (strcmp(got, want))
		djp_test_fail(__FILE__, __LINE__, "parameters '%s', not '%s'", got, want);
}

TEST(kfunc_dwarf_names_every_width_and_sign)
{
	struct kfunc_sig sig;
	char fmt[128];

	params("kp_mixed", &sig);
	names_are(&sig, "neg small sh name big flag");
	CHECK(kfunc_format(&sig, false, fmt, sizeof(fmt)) > 0);
	CHECK_STR(fmt, "neg=%d small=%u sh=%d name=%#lx big=%ld flag=%u");
	CHECK(kfunc_format(&sig, true, fmt, sizeof(fmt)) > 0);
	CHECK_STR(fmt, "return=%d");
	/* a register's upper bits are not the parameter's */
	CHECK_EQ(kfunc_arg_value(&sig.arg[0], 0x00000000fffffffbull), -5);
	CHECK_EQ(kfunc_arg_value(&sig.arg[0], 0xdeadbeef00000007ull), 7);
	CHECK_EQ(kfunc_arg_value(&sig.arg[1], 0xffffffffffffffc8ull), 200);
	CHECK_EQ(kfunc_arg_value(&sig.arg[2], 0x000000000000fed4ull), -300);
	CHECK_EQ(kfunc_arg_value(&sig.arg[3], 0xffff888001234560ull), (int64_t)0xffff888001234560ull);
	CHECK_EQ(kfunc_arg_value(&sig.arg[4], (uint64_t)-1234567890123ll), -1234567890123ll);
	CHECK_EQ(kfunc_arg_value(&sig.arg[5], 0x1234567800000001ull), 1);
	CHECK_EQ(kfunc_arg_value(&sig.ret, 0x00000000ffffffffull), -1);
}

TEST(kfunc_dwarf_registers_follow_the_abi)
{
	struct kfunc_sig sig;
	char fmt[128];

	/* the floats in SSE registers, the 24-byte struct in memory: the
	 * rest in rdi, rsi, rdx */
	params("kp_float", &sig);
	names_are(&sig, "after p u");
	CHECK_STR(sig.arg[1].conv, "%#lx");
	/* a 16-byte struct of longs takes two registers, not named */
	params("kp_wide", &sig);
	names_are(&sig, "x - - y");
	CHECK_EQ(kfunc_format(&sig, true, fmt, sizeof(fmt)), -1); /* void */
	/* six registers, the seventh on the stack */
	params("kp_seven", &sig);
	names_are(&sig, "a1 a2 a3 a4 a5 a6");
	/* a structure returned in memory: its hidden pointer in %rdi first */
	params("kp_retbig", &sig);
	names_are(&sig, "- a b");
	CHECK_STR(sig.arg[1].conv, "%d");
	CHECK(!sig.has_ret);
	/* a structure of two floats is in a vector register */
	params("kp_fpair", &sig);
	names_are(&sig, "after");
}

TEST(kfunc_dwarf_says_what_is_missing)
{
	struct kfunc_sig sig;
	char why[256];

	CHECK(kfunc_file_params(djp_test_path("trace_progs/kparams.o"), "kp_nosuch", &sig, why, sizeof(why)) < 0);
	CHECK(strstr(why, "no debug information for 'kp_nosuch'") != NULL);
	CHECK(kfunc_file_params("/nonexistent/vmlinux", "kp_mixed", &sig, why, sizeof(why)) < 0);
	CHECK(strstr(why, "/nonexistent/vmlinux") != NULL);
}
