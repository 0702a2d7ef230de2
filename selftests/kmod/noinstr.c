// SPDX-License-Identifier: GPL-2.0
/*
 * A marker in noinstr text (code that runs where RCU may not be watching:
 * entry, idle) is never armed, as kprobes refuses those addresses
 * (within_kprobe_blacklist): djprobe.ko leaves it out of the module's
 * markers, with a warning, so it is not listed, no pattern connects it,
 * and its NOP stays.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/string.h>
#include <djprobe/djprobe.h>
#include <djprobe/marker.h>
#include "kselftest.h"

static const u8 nop6[6] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 };

noinstr void ks_noinstr_fn(int i)
{
	MARK(ks_noinstr, "i=%d", i);
}

static int find_noinstr(const struct djp_kmarker *m, void *data)
{
	if (strcmp(m->module, KS_MODULE) || strcmp(m->name, "ks_noinstr"))
		return 0;
	*(bool *)data = true;
	return 1;
}

static void noinstr_handler(const struct djp_hit *hit, void *data)
{
}

void ks_noinstr_run(void)
{
	const u8 *fn = (const u8 *)ks_noinstr_fn;
	bool listed = false, nop = false;
	int id, k;

	djp_for_each_marker(find_noinstr, &listed);
	id = djp_connect(KS_MODULE ":ks_noinstr", noinstr_handler, NULL, 0);
	if (id >= 0)
		djp_disconnect(id);
	for (k = 0; k + sizeof(nop6) <= 64 && !nop; k++) /* its NOP, where the function has it */
		nop = !memcmp(fn + k, nop6, sizeof(nop6));
	ks_tap(!listed && id == -ENOENT && nop,
	       "a marker in noinstr text is never armed: not listed, connect -ENOENT, its NOP kept # listed %d, connect %d",
	       listed, id);
}
