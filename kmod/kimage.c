// SPDX-License-Identifier: GPL-2.0
/*
 * Finding the markers of the kernel image.
 *
 * A kernel built with djprobe's patch series (kernel-patches/linux-6.1/)
 * has MARK() sites in its own text and their records in a read-only
 * `.markers` output section of vmlinux.  A module cannot name the linker
 * symbols that bound that section, and djprobe does not dig them out of
 * kallsyms: the series exports one object, `kernel_markers`, that gives
 * the records' bounds and the ranges of text a patcher must respect.
 * djprobe.ko looks it up by name with __symbol_get(), so that the same
 * djprobe.ko loads on a kernel without the series (no symbol: the image
 * simply has no markers) and needs no link-time dependency on it.  The
 * layout is the series' version 1; another version is refused with one
 * warning.
 *
 * The records are walked one by one (each says its size) and each is
 * parsed by lib/markers_parse.c, as a module's are: a record that does not
 * parse, whose site is not in the image's core text, or whose site lies in
 * noinstr, __kprobes or entry text (where an int3 or a jump must never be
 * written) is skipped with one warning; a site in init text, gone after
 * boot, is skipped silently.  The sites are then one more djp_kmod, named
 * "vmlinux", that never goes away: `djp list -k 'vmlinux:*'`,
 * `kernel.mark("sched_switch")` and `module("vmlinux").mark(...)` see it
 * as they see a module's.
 *
 * A sym(%rip) argument of an image marker is resolved among the exported
 * symbols only (the image's other symbols are not reachable without
 * kallsyms); a record whose argument names another symbol is skipped.
 */
#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "djprobe_int.h"

#define IMAGE_NAME "vmlinux"
#define IMAGE_SYMBOL "kernel_markers"
#define RECORD_HEADER 16

/* The series' struct kernel_markers, version 1 (<linux/djprobe_marker.h>),
 * spelled here so that djprobe.ko builds against any kernel. */
struct djp_kernel_markers {
	unsigned int version;
	unsigned int reserved;
	const void *start, *stop;
	unsigned long text_start, text_end;
	unsigned long init_start, init_end;
	unsigned long noinstr_start, noinstr_end;
	unsigned long kprobes_start, kprobes_end;
	unsigned long entry_start, entry_end;
};
#define DJP_KERNEL_MARKERS_VERSION 1

static bool within_range(unsigned long a, size_t len, unsigned long start, unsigned long end)
{
	return a >= start && a + len >= a && a + len <= end;
}

static bool overlaps(unsigned long a, size_t len, unsigned long start, unsigned long end)
{
	return a < end && a + len > start;
}

/* Parse and check one record; 0 and *site filled, or -errno. */
static int read_record(const struct djp_kernel_markers *km, unsigned long rec, u16 size, struct djp_ksite *site)
{
	struct djp_marker_list *l = NULL;
	unsigned long a;
	int ret;

	/* a sym(%rip) argument: among the exported symbols only (the top) */
	ret = djp_ksite_parse(rec, size, IMAGE_NAME, djp_ksym_exported, NULL, &l);
	if (ret)
		return ret;
	a = (unsigned long)l->v[0].site;
	if (within_range(a, DJP_SITE_LEN, km->init_start, km->init_end)) {
		djp_marker_list_free(l);
		return -ERANGE;
	}
	if (!within_range(a, DJP_SITE_LEN, km->text_start, km->text_end)) {
		pr_warn("djprobe: " IMAGE_NAME ": marker %s has its site at %px, outside the kernel's text\n",
			l->v[0].name, (void *)a);
		djp_marker_list_free(l);
		return -ERANGE;
	}
	if (overlaps(a, DJP_SITE_LEN, km->noinstr_start, km->noinstr_end) ||
	    overlaps(a, DJP_SITE_LEN, km->kprobes_start, km->kprobes_end) ||
	    overlaps(a, DJP_SITE_LEN, km->entry_start, km->entry_end)) {
		pr_warn("djprobe: " IMAGE_NAME ": marker %s is in noinstr, __kprobes or entry text: never armed\n",
			l->v[0].name);
		djp_marker_list_free(l);
		return -EPERM;
	}
	djp_ksite_init(site, l);
	return 0;
}

/* Count the records (rec == NULL) or read them into km->sites. */
static int walk(const struct djp_kernel_markers *image, struct djp_kmod *km, unsigned int *count)
{
	unsigned long p = (unsigned long)image->start, end = (unsigned long)image->stop;
	unsigned int n = 0;

	while (p < end) {
		u16 size;

		if (end - p < RECORD_HEADER) {
			pr_warn("djprobe: " IMAGE_NAME ": %lu stray bytes at the end of .markers\n", end - p);
			break;
		}
		size = *(const u16 *)(p + 2);
		if (size < RECORD_HEADER || !IS_ALIGNED(size, 8) || size > end - p) {
			pr_warn("djprobe: " IMAGE_NAME ": marker record at %px has size %u: the rest of .markers is skipped\n",
				(void *)p, size);
			break;
		}
		if (km) {
			struct djp_ksite *s = &km->sites[km->nsites];

			if (km->nsites < *count && read_record(image, p, size, s) == 0) {
				s->kmod = km;
				km->nsites++;
			}
		} else {
			n++;
		}
		p += size;
	}
	if (!km)
		*count = n;
	return 0;
}

int djp_kimage_read(struct djp_kmod **out)
{
	const struct djp_kernel_markers *image;
	struct djp_kmod *km;
	unsigned int n = 0;
	int ret = 0;

	*out = NULL;
	image = __symbol_get(IMAGE_SYMBOL);
	if (!image)
		return 0;	/* a kernel without the series */
	if (image->version != DJP_KERNEL_MARKERS_VERSION) {
		pr_warn("djprobe: " IMAGE_NAME ": " IMAGE_SYMBOL " has version %u, not %u: the image's markers are not read\n",
			image->version, DJP_KERNEL_MARKERS_VERSION);
		goto out;
	}
	walk(image, NULL, &n);
	km = kzalloc(sizeof(*km), GFP_KERNEL);
	if (km && n)
		km->sites = kcalloc(n, sizeof(*km->sites), GFP_KERNEL);
	if (!km || (n && !km->sites)) {
		kfree(km);
		ret = -ENOMEM;
		goto out;
	}
	km->name = IMAGE_NAME;
	walk(image, km, &n);
	djp_kmod_sites_sort(km);
	*out = km;
out:
	__symbol_put(IMAGE_SYMBOL);
	return ret;
}
