// SPDX-License-Identifier: GPL-2.0
/*
 * djp_connect's patterns are user space's (lib/marker_match.c): the ':'
 * that ends a module glob is the first one outside a bracket expression,
 * so "ks_ak_[:a-z]*" is a marker glob for every module, whose brackets
 * hold a ':'; and an empty module or marker glob is refused.  The probes
 * it connects are counted on the listing (djp_for_each_marker).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/errno.h>
#include <linux/module.h>
#include <linux/string.h>
#include <djprobe/djprobe.h>
#include "kselftest.h"

static int count_probed(const struct djp_kmarker *m, void *data)
{
	if (!strcmp(m->module, KS_MODULE) && !strncmp(m->name, "ks_ak_", 6) && m->probes)
		++*(unsigned int *)data;
	return 0;
}

static void patterns_handler(const struct djp_hit *hit, void *data)
{
}

void ks_patterns_run(void)
{
	unsigned int probed = 0;
	int id, empty_mod, empty_name;

	id = djp_connect("ks_ak_[:a-z]*", patterns_handler, NULL, 0);
	djp_for_each_marker(count_probed, &probed);
	if (id >= 0)
		djp_disconnect(id);
	empty_mod = djp_connect(":ks_ak_*", patterns_handler, NULL, 0);
	empty_name = djp_connect(KS_MODULE ":", patterns_handler, NULL, 0);
	ks_tap(id >= 0 && probed == 5 && empty_mod == -EINVAL && empty_name == -EINVAL,
	       "a pattern's ':' inside brackets is its marker glob's; an empty glob is -EINVAL # connect %d, %u ks_ak_ markers probed, empty globs %d %d",
	       id, probed, empty_mod, empty_name);
}
