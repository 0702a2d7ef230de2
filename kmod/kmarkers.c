// SPDX-License-Identifier: GPL-2.0
/*
 * Finding the markers of a loaded module.
 *
 * A .ko is a relocatable object: the module loader lays its sections out
 * and applies relocations, but keeps no pointer to an arbitrary section
 * such as `.markers` (the sysfs section attributes appear only after the
 * module's COMING notification, too late to arm before its init runs).
 * What it does keep, with CONFIG_KALLSYMS_ALL, is every symbol of an
 * allocated section with its final address, in mod->kallsyms; and in the
 * kernel, <djprobe/marker.h> gives each record a local symbol,
 * __djp_marker_N.  So a module's markers are the symbols with that prefix,
 * and each symbol's address is one record, whose site field (a PC64
 * relocation) the loader has already turned into the site's distance.
 *
 * A record is untrusted bytes like any other: it must lie inside the
 * module's core, and it is parsed by lib/markers_parse.c, user space's
 * parser compiled here through kmod/compat/, which checks the version, the
 * sizes and that every string ends inside the record, and parses the
 * argument locations (a sym(%rip) one is resolved through the same
 * kallsyms, or among the exported symbols).  The site must then be inside the module's core text, and
 * hold the NOP.  A record that fails any check is skipped, with one
 * warning naming the module; the others are kept.
 *
 * mod->kallsyms is swapped from the loader's full table to the core one
 * when init ends, so it is read under rcu_read_lock_sched() as kallsyms
 * does, and only for collecting addresses; the parsing, which allocates,
 * happens outside.  Markers in init text are not kept (that text goes
 * away after init, and nothing could disarm it then), nor, with a
 * warning, markers in noinstr or __kprobes text, where kprobes refuses to
 * go too.
 */
#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "djprobe_int.h"

#define RECORD_SYM_PREFIX "__djp_marker_"
#define RECORD_HEADER 16

const u8 djp_nop6[DJP_SITE_LEN] = DJP_NOP6;

static bool in_core(const struct module *mod, unsigned long a, size_t len)
{
	unsigned long base = (unsigned long)mod->core_layout.base;

	return a >= base && a + len >= a && a + len <= base + mod->core_layout.size;
}

static bool in_core_text(const struct module *mod, unsigned long a, size_t len)
{
	unsigned long base = (unsigned long)mod->core_layout.base;

	return a >= base && a + len >= a && a + len <= base + mod->core_layout.text_size;
}

/* Is the site in text a probe must stay out of, as kprobes does
 * (within_kprobe_blacklist): the module's noinstr text, which runs where
 * RCU may not be watching and an int3 must not fire (entry, idle), and its
 * __kprobes text, which the kprobes fallback itself would refuse. */
static bool in_untouchable_text(const struct module *mod, unsigned long a)
{
	unsigned long ni = (unsigned long)mod->noinstr_text_start;

	if (ni && a >= ni && a + DJP_SITE_LEN <= ni + mod->noinstr_text_size)
		return true;
#ifdef CONFIG_KPROBES
	if (mod->kprobes_text_start && a >= (unsigned long)mod->kprobes_text_start &&
	    a + DJP_SITE_LEN <= (unsigned long)mod->kprobes_text_start + mod->kprobes_text_size)
		return true;
#endif
	return false;
}

/* The addresses of the module's records: count, or with `out`, fill up to
 * `max`.  Returns how many there are. */
static unsigned int record_syms(struct module *mod, unsigned long *out, unsigned int max)
{
	const struct mod_kallsyms *ks;
	unsigned int i, n = 0;

	rcu_read_lock_sched();
	ks = rcu_dereference_sched(mod->kallsyms);
	for (i = 0; ks && i < ks->num_symtab; i++) {
		const Elf_Sym *sym = &ks->symtab[i];

		if (sym->st_shndx == SHN_UNDEF ||
		    strncmp(ks->strtab + sym->st_name, RECORD_SYM_PREFIX, sizeof(RECORD_SYM_PREFIX) - 1))
			continue;
		if (out && n < max)
			out[n] = sym->st_value;
		n++;
	}
	rcu_read_unlock_sched();
	return n;
}

/*
 * lib/argloc.c's resolver of sym(%rip) operands: the module's own symbols
 * (while the module is coming, its undefined ones too, which the loader
 * has resolved), else an exported symbol of the kernel or of another
 * module (__symbol_get, its reference dropped at once: the address is
 * only read at a hit, with copy_from_kernel_nofault).
 */
static int sym_lookup(void *ctx, const char *name, size_t len, uint64_t *addr)
{
	struct module *mod = ctx;
	const struct mod_kallsyms *ks;
	unsigned int i;
	int ret = -ENOENT;

	rcu_read_lock_sched();
	ks = rcu_dereference_sched(mod->kallsyms);
	for (i = 0; ks && i < ks->num_symtab && ret; i++) {
		const Elf_Sym *sym = &ks->symtab[i];
		const char *s = ks->strtab + sym->st_name;

		if (sym->st_value && !strncmp(s, name, len) && s[len] == '\0') {
			*addr = sym->st_value;
			ret = 0;
		}
	}
	rcu_read_unlock_sched();
	return ret ? djp_ksym_exported(NULL, name, len, addr) : 0;
}

/* Parse and check the record at `rec`; 0 and *site filled, or -errno
 * after one warning. */
static int read_record(struct module *mod, unsigned long rec, struct djp_ksite *site)
{
	struct djp_marker_list *l = NULL;
	u16 size;
	int ret;

	if (!IS_ALIGNED(rec, 8) || !in_core(mod, rec, RECORD_HEADER)) {
		pr_warn("djprobe: %s: marker record at %px is outside the module's core\n", mod->name, (void *)rec);
		return -EINVAL;
	}
	size = *(const u16 *)(rec + 2);
	if (!in_core(mod, rec, size)) {
		pr_warn("djprobe: %s: marker record at %px (size %u) runs out of the module's core\n", mod->name,
			(void *)rec, size);
		return -EINVAL;
	}
	ret = djp_ksite_parse(rec, size, mod->name, sym_lookup, mod, &l);
	if (ret)
		return ret;
	site->addr = (unsigned long)l->v[0].site;
	if (!in_core_text(mod, site->addr, DJP_SITE_LEN)) {
		/* An __init function's marker: not an error, never armed. */
		if (!within_module_init(site->addr, mod))
			pr_warn("djprobe: %s: marker %s has its site at %px, outside the module's text\n", mod->name,
				l->v[0].name, (void *)site->addr);
		djp_marker_list_free(l);
		return -ERANGE;
	}
	if (in_untouchable_text(mod, site->addr)) {
		pr_warn("djprobe: %s: marker %s is in noinstr or __kprobes text: never armed\n", mod->name,
			l->v[0].name);
		djp_marker_list_free(l);
		return -EPERM;
	}
	djp_ksite_init(site, l);
	return 0;
}

int djp_kmod_read(struct module *mod, struct djp_kmod **out)
{
	struct djp_kmod *km;
	unsigned long *recs;
	unsigned int n, i, got;

	*out = NULL;
	n = record_syms(mod, NULL, 0);
	km = kzalloc(sizeof(*km), GFP_KERNEL);
	recs = kcalloc(n ?: 1, sizeof(*recs), GFP_KERNEL);
	if (km && n)
		km->sites = kcalloc(n, sizeof(*km->sites), GFP_KERNEL);
	if (!km || !recs || (n && !km->sites)) {
		kfree(recs);
		if (km)
			kfree(km->sites);
		kfree(km);
		return -ENOMEM;
	}
	km->mod = mod;
	km->name = mod->name;
	got = min(n, record_syms(mod, recs, n));
	for (i = 0; i < got; i++) {
		struct djp_ksite *s = &km->sites[km->nsites];

		if (read_record(mod, recs[i], s) == 0) {
			s->kmod = km;
			km->nsites++;
		}
	}
	kfree(recs);
	djp_kmod_sites_sort(km);
	*out = km;
	return 0;
}
