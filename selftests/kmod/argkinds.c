// SPDX-License-Identifier: GPL-2.0
/*
 * Argument locations in the kernel: every kind a module's markers get from
 * the compiler, read by djp_hit_arg exactly, through the trampoline's
 * pt_regs and through a kprobe's.
 *
 * The operands are chosen so that the compiler has each kind to print:
 * values it computes (registers, every width and sign), volatile locals
 * (memory off %rsp: the kernel has no frame pointer), volatile globals
 * (sym(%rip)), an element of a global array at a runtime index (code that
 * is not position independent addresses it as sym(,%index,scale)), and
 * constants (immediates whose top bit is set, printed as negative numbers
 * whatever their type).  The kinds met are checked from the markers'
 * argument strings, so a compiler that chose otherwise shows in the log.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/string.h>
#include <djprobe/djprobe.h>
#include <djprobe/marker.h>
#include "kselftest.h"

static volatile s32 ks_ak_g32;
static volatile u16 ks_ak_g16;
static volatile s64 ks_ak_arr[4];
static volatile u8 ks_ak_barr[8];

#define AK_MARKERS 5
static const char *const ak_names[AK_MARKERS] = { "ks_ak_reg", "ks_ak_stack", "ks_ak_global", "ks_ak_index",
						  "ks_ak_imm" };

/* What each marker's last hit read. */
static s64 ak_got[AK_MARKERS][4];
static unsigned int ak_hits[AK_MARKERS];

static void ak_handler(const struct djp_hit *hit, void *data)
{
	const char *name = djp_hit_name(hit);
	unsigned int k, i;

	for (k = 0; k < AK_MARKERS; k++)
		if (!strcmp(name, ak_names[k]))
			break;
	if (k == AK_MARKERS)
		return;
	ak_hits[k]++;
	for (i = 0; i < 4 && i < djp_hit_nargs(hit); i++)
		ak_got[k][i] = djp_hit_arg(hit, i);
}

static noinline void ks_ak_fire(u64 seed, long idx, s64 want[AK_MARKERS][4])
{
	volatile s8 l8 = (s8)seed;
	volatile u16 l16 = (u16)(seed >> 8);
	volatile s32 l32 = (s32)(seed >> 16);
	volatile u64 l64 = seed * 3;
	u64 r = seed * 0x9e3779b97f4a7c15ULL;
	long i;

	ks_ak_g32 = (s32)(seed >> 3);
	ks_ak_g16 = (u16)(seed >> 5);
	for (i = 0; i < 4; i++)
		ks_ak_arr[i] = (s64)(seed ^ ((u64)i << 60));
	for (i = 0; i < 8; i++)
		ks_ak_barr[i] = (u8)(seed >> i);

	MARK(ks_ak_reg, "a=%hhd b=%hu c=%d d=%llu", (s8)r, (u16)(r >> 7), (s32)(r >> 13), r ^ seed);
	MARK(ks_ak_stack, "a=%hhd b=%hu c=%d d=%llu", l8, l16, l32, l64);
	MARK(ks_ak_global, "a=%d b=%hu", ks_ak_g32, ks_ak_g16);
	MARK(ks_ak_index, "a=%lld b=%hhu", ks_ak_arr[idx], ks_ak_barr[idx + 1]);
	MARK(ks_ak_imm, "a=%d b=%u c=%hhu d=%lld", -5, 3000000000u, (u8)200, -9000000000000000000LL);

	want[0][0] = (s8)r, want[0][1] = (u16)(r >> 7), want[0][2] = (s32)(r >> 13), want[0][3] = (s64)(r ^ seed);
	want[1][0] = (s8)seed, want[1][1] = (u16)(seed >> 8), want[1][2] = (s32)(seed >> 16);
	want[1][3] = (s64)(seed * 3);
	want[2][0] = (s32)(seed >> 3), want[2][1] = (u16)(seed >> 5);
	want[3][0] = (s64)(seed ^ ((u64)idx << 60)), want[3][1] = (u8)(seed >> (idx + 1));
	want[4][0] = -5, want[4][1] = 3000000000LL, want[4][2] = 200, want[4][3] = -9000000000000000000LL;
}

/* The kinds the markers' argument strings name, for the log. */
static int ak_kinds(const struct djp_kmarker *m, void *data)
{
	if (!strcmp(m->module, KS_MODULE) && !strncmp(m->name, "ks_ak_", 6))
		ks_diag("%s: %s (%s)", m->name, m->args, m->how);
	return 0;
}

static void ak_run(unsigned int flags, const char *how)
{
	static const unsigned int nargs[AK_MARKERS] = { 4, 4, 2, 2, 4 };
	s64 want[AK_MARKERS][4];
	unsigned int wrong = 0, missing = 0, k, i;
	int id, round;

	memset(ak_hits, 0, sizeof(ak_hits));
	id = djp_connect(KS_MODULE ":ks_ak_*", ak_handler, NULL, flags);
	if (id < 0) {
		ks_tap(false, "every argument location read exactly, %s # connect %d", how, id);
		return;
	}
	djp_for_each_marker(ak_kinds, NULL);
	for (round = 0; round < 4; round++) {
		memset(ak_got, 0, sizeof(ak_got));
		ks_ak_fire(0x8badf00dfeedfacfULL * (round + 1), round % 3, want);
		for (k = 0; k < AK_MARKERS; k++)
			for (i = 0; i < nargs[k]; i++)
				if (ak_got[k][i] != want[k][i]) {
					if (wrong++ < 8)
						ks_diag("%s: %s arg %u is %lld, not %lld", how, ak_names[k], i + 1,
							ak_got[k][i], want[k][i]);
				}
	}
	djp_disconnect(id);
	for (k = 0; k < AK_MARKERS; k++)
		missing += ak_hits[k] != 4;
	ks_tap(!wrong && !missing, "every argument location read exactly, %s # %u wrong, %u markers not hit 4 times",
	       how, wrong, missing);
}

void ks_argkinds_run(void)
{
	ak_run(0, "through a jump");
	ak_run(DJP_FORCE_KPROBE, "through a kprobe");
}
