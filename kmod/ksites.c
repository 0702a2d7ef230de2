// SPDX-License-Identifier: GPL-2.0
/*
 * A djp_kmod's sites, whoever found their records: a module's (kmarkers.c,
 * through its kallsyms) and the kernel image's (kimage.c, through the
 * series' kernel_markers).  Each finder checks where a record may lie and
 * where its site may be, which differ; what follows is the same for both:
 * one record parsed by lib/markers_parse.c into exactly one marker, a
 * sym(%rip) argument resolved among the exported symbols when the finder
 * has no symbols of its own for it, the site filled in from the marker,
 * and the sites sorted by address (the trap table and the listing want
 * them so) with each pointing at its kmod.
 */
#include <linux/kallsyms.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>

#include "addr_sorted.h"
#include "djprobe_int.h"

int djp_ksym_exported(void *ctx, const char *name, size_t len, uint64_t *addr)
{
	char buf[KSYM_NAME_LEN];
	void *p;

	if (len >= sizeof(buf))
		return -ENOENT;
	memcpy(buf, name, len);
	buf[len] = '\0';
	p = __symbol_get(buf);
	if (!p)
		return -ENOENT;
	/* the reference is dropped at once: the address is only read at a
	 * hit, with copy_from_kernel_nofault */
	__symbol_put(buf);
	*addr = (unsigned long)p;
	return 0;
}

int djp_ksite_parse(unsigned long rec, u16 size, const char *owner, djp_sym_lookup_fn lookup, void *ctx,
		    struct djp_marker_list **out)
{
	struct djp_marker_list *l = NULL;
	char err[160];
	int ret;

	ret = djp_markers_parse_section_sym((const void *)rec, size, rec, owner, lookup, ctx, &l, err, sizeof(err));
	if (ret) {
		pr_warn("djprobe: %s\n", err);
		return ret;
	}
	if (l->count != 1) {
		pr_warn("djprobe: %s: marker record at %px holds %zu records\n", owner, (void *)rec, l->count);
		djp_marker_list_free(l);
		return -EINVAL;
	}
	*out = l;
	return 0;
}

void djp_ksite_init(struct djp_ksite *site, struct djp_marker_list *l)
{
	site->addr = (unsigned long)l->v[0].site;
	site->rec = l;
	site->m = &l->v[0];
	site->slot = -1;
}

static_assert(offsetof(struct djp_ksite, addr) == 0);

void djp_kmod_sites_sort(struct djp_kmod *km)
{
	unsigned int i;

	sort(km->sites, km->nsites, sizeof(*km->sites), djp_addr_cmp, NULL);
	for (i = 0; i < km->nsites; i++)
		km->sites[i].kmod = km;
}

void djp_kmod_free(struct djp_kmod *km)
{
	unsigned int i;

	if (!km)
		return;
	for (i = 0; i < km->nsites; i++)
		djp_marker_list_free(km->sites[i].rec);
	kfree(km->sites);
	kfree(km);
}
