/*
 * A kernel function's parameters by name, from the running kernel's
 * DWARF: what `$fd` is at kernel.function("NAME"), and how its event's
 * fields are named and typed in `djp trace -k func:NAME`.
 *
 * How it works.  djprobe.ko's function point records the six integer
 * argument registers at the entry (%rdi %rsi %rdx %rcx %r8 %r9, System V)
 * and the return value (kmod/kfunc.c).  Which register holds which
 * parameter is the calling convention's, and the project has it once:
 * arch_entry_slots (arch/x86/call_conv.c, the psABI's classification, as
 * for a process's function entries) places every parameter by its type,
 * the hidden pointer of a structure returned in memory first, floats and
 * structures of floats in vector registers, what does not fit on the
 * stack.  A parameter in one of the six registers is named; an integer or
 * pointer is read as one, a structure whole in one register as its raw
 * word; a register holding something else (half of a 16-byte structure,
 * the hidden pointer) is argN.  Only the entry (+0) has them there: a
 * kprobe further in sees registers the function has changed.  A function
 * whose DWARF says DW_CC_nocall has a calling convention of the
 * compiler's own (IPA-SRA, constprop): none is named.
 *
 * Which DWARF.  elfutils' libdwfl knows the kernel's layout: the image's
 * debug file (the kernel's own `vmlinux`, or a distribution's debug
 * package: /usr/lib/debug/boot/vmlinux-RELEASE, /boot/vmlinux-RELEASE,
 * /lib/modules/RELEASE/build/vmlinux), and each loaded module's .ko under
 * /lib/modules/RELEASE, placed where /sys/module says it is (or read
 * from its file alone when it cannot be placed: the parameters need no
 * addresses).  The
 * function is found by its symbol (kallsyms' name, which kprobes uses),
 * in the module named or else in the image and every module, and its
 * DWARF by that address: the subprogram there, or the one it is a
 * concrete copy of (its parameters in declared order).
 *
 * A register holds a narrower parameter with its upper bits undefined:
 * the value is cut to the parameter's size and extended by its
 * signedness (kfunc_arg_value), so a -5 in an int is -5, not 4294967291.
 * The answers are kept by name: a listing asks again at every new point.
 */
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "lib/argloc.h"
#include "lib/dwarf_types.h"
#include "tools/djp/kfunc_dwarf.h"

#define KFUNC_MAX_PARAMS 32 /* declared parameters looked at */

static const Dwfl_Callbacks kernel_callbacks = {
	.find_elf = dwfl_linux_kernel_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_linux_kernel_module_section_address,
};

struct cached {
	char *key; /* "MODULE:NAME" or ":NAME" */
	int err;
	struct kfunc_sig sig;
	char why[256];
};

static Dwfl *dwfl;
static bool reported;
static struct cached *cache;
static size_t ncache;

static Dwfl *kernel_dwfl(void)
{
	if (reported)
		return dwfl;
	reported = true;
	if (!(dwfl = dwfl_begin(&kernel_callbacks)))
		return NULL;
	dwfl_report_begin(dwfl);
	/* the image (its ELF, when its debug file is installed, is found as
	 * its symbols are asked for) and the modules */
	(void)dwfl_linux_kernel_report_kernel(dwfl);
	(void)dwfl_linux_kernel_report_modules(dwfl);
	dwfl_report_end(dwfl, NULL, NULL);
	return dwfl;
}

/* The register a parameter the convention places (arch_entry_slots) is
 * in, as the function point records them (0..5), or -1. */
static int record_index(const struct arch_param_slot *s)
{
	int i = arch_int_arg_index(s->reg);
	return i < KFUNC_MAX_ARGS ? i : -1;
}

/* How a value of type ti prints, and what it is cut and extended to. */
static void arg_of(const struct djp_tinfo *ti, struct kfunc_arg *a)
{
	int tag = dwarf_tag((Dwarf_Die *)&ti->die);
	bool addr = ti->kind != DJP_TK_INT || tag == DW_TAG_pointer_type || tag == DW_TAG_reference_type ||
		    tag == DW_TAG_rvalue_reference_type;

	a->size = (uint8_t)(addr ? 8 : ti->size);
	a->is_signed = !addr && ti->is_signed;
	a->conv = addr ? "%#lx" : ti->size <= 4 ? (ti->is_signed ? "%d" : "%u") : (ti->is_signed ? "%ld" : "%lu");
}

/* The parameters of subprogram fn into sig, each in the register the
 * calling convention puts it in (arch/x86/call_conv.c, as for a process's
 * function entries); an error when the compiler changed the convention. */
static int params_of(Dwarf_Die *fn, struct kfunc_sig *sig, char *why, size_t whysz)
{
	struct djp_tinfo ti[KFUNC_MAX_PARAMS];
	struct arch_param_slot slots[KFUNC_MAX_PARAMS];
	const char *names[KFUNC_MAX_PARAMS];
	Dwarf_Die origin, child, type, ret, *decl = fn;
	Dwarf_Word cc;
	unsigned n = 0;
	bool has_ret;

	if (djp_dwarf_ref_attr(fn, DW_AT_abstract_origin, &origin))
		decl = &origin; /* every parameter, in declared order */
	if (djp_dwarf_udata_attr(fn, DW_AT_calling_convention, &cc) && cc == DW_CC_nocall) {
		snprintf(why, whysz, "the compiler gave it a calling convention of its own (DW_CC_nocall)");
		return -ENOTSUP;
	}
	if (dwarf_child(decl, &child) == 0) {
		do {
			if (dwarf_tag(&child) != DW_TAG_formal_parameter || n == KFUNC_MAX_PARAMS)
				continue;
			names[n] = dwarf_diename(&child);
			slots[n].ti = NULL;
			if (djp_dwarf_ref_attr(&child, DW_AT_type, &type)) {
				arch_type_info(&type, &ti[n]);
				slots[n].ti = &ti[n];
			}
			n++;
		} while (dwarf_siblingof(&child, &child) == 0);
	}
	has_ret = djp_dwarf_ref_attr(decl, DW_AT_type, &ret);
	arch_entry_slots(slots, n, has_ret ? &ret : NULL, false, false);
	memset(sig, 0, sizeof(*sig));
	for (unsigned i = 0; i < KFUNC_MAX_ARGS; i++)
		sig->arg[i].conv = "%#lx"; /* a register no parameter is read from */
	for (unsigned i = 0; i < n; i++) {
		int r = record_index(&slots[i]);
		if (r < 0)
			continue; /* on the stack, in vector registers, or not known */
		snprintf(sig->arg[r].name, sizeof(sig->arg[r].name), "%s", names[i] ? names[i] : "");
		if (slots[i].kind == DJP_LOC_REG)
			arg_of(&ti[i], &sig->arg[r]);
		sig->nargs = (unsigned)r + 1;
	}
	if (has_ret) {
		struct djp_tinfo rt;
		arch_type_info(&ret, &rt);
		sig->has_ret = rt.kind == DJP_TK_INT;
		arg_of(&rt, &sig->ret);
		snprintf(sig->ret.name, sizeof(sig->ret.name), "return");
	}
	return 0;
}

/* The subprogram at pc (module-relative, bias taken off) of cu. */
static bool subprogram_at(Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *out)
{
	Dwarf_Die *scopes = NULL;
	int n = dwarf_getscopes(cu, pc, &scopes);
	bool found = false;
	for (int i = 0; i < n && !found; i++)
		if (dwarf_tag(&scopes[i]) == DW_TAG_subprogram) {
			*out = scopes[i];
			found = true;
		}
	free(scopes);
	return found;
}

struct find {
	const char *module; /* NULL: any */
	const char *name;
	Dwfl_Module *mod;
	GElf_Addr addr;
	bool image_symbols; /* the image's ELF was found */
};

/* NAME's function symbol in mod: its address, or 0. */
static GElf_Addr symbol_in(Dwfl_Module *mod, const char *name)
{
	int n = dwfl_module_getsymtab(mod);
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *s = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);
		if (s && GELF_ST_TYPE(sym.st_info) == STT_FUNC && !strcmp(s, name))
			return addr;
	}
	return 0;
}

static int find_symbol(Dwfl_Module *mod, void **user, const char *mname, Dwarf_Addr start, void *arg)
{
	struct find *f = arg;
	bool image = !strcmp(mname, "kernel");
	(void)user;
	(void)start;
	if (f->module && strcmp(mname, f->module) && !(strcmp(f->module, "vmlinux") == 0 && image))
		return DWARF_CB_OK;
	if (image)
		f->image_symbols = dwfl_module_getsymtab(mod) > 0;
	if ((f->addr = symbol_in(mod, f->name))) {
		f->mod = mod;
		return DWARF_CB_ABORT;
	}
	return DWARF_CB_OK;
}

/* The function's DWARF read from a file alone, at the file's own
 * addresses: a module's .ko is relocatable, and libdwfl places its DWARF
 * where /sys/module/M/sections says only when every section it refers to
 * is listed there; the parameters do not need the addresses. */
int kfunc_file_params(const char *file, const char *name, struct kfunc_sig *sig, char *why, size_t whysz)
{
	static const Dwfl_Callbacks offline = {
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
	};
	Dwfl *d;
	Dwfl_Module *m;
	Dwarf_Die *cu, fn;
	Dwarf_Addr bias, addr;
	int err = -ENOENT;

	if (!(d = dwfl_begin(&offline))) {
		snprintf(why, whysz, "libdwfl: %s", dwfl_errmsg(-1));
		return -ENOMEM;
	}
	dwfl_report_begin(d);
	m = dwfl_report_offline(d, "offline", file, -1);
	dwfl_report_end(d, NULL, NULL);
	if (m && (addr = symbol_in(m, name)) && (cu = dwfl_module_addrdie(m, addr, &bias)) &&
	    subprogram_at(cu, addr - bias, &fn))
		err = params_of(&fn, sig, why, whysz);
	else
		snprintf(why, whysz, "no debug information for '%s' in %s (libdwfl: %s)", name, file, dwfl_errmsg(-1));
	dwfl_end(d);
	return err;
}

static int offline_params(Dwfl_Module *mod, const char *name, struct kfunc_sig *sig, char *why, size_t whysz)
{
	const char *file = NULL;
	Dwarf_Addr bias;

	(void)dwfl_module_getelf(mod, &bias);
	dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, &file, NULL);
	if (!file) {
		snprintf(why, whysz, "no file for the module of '%s' (libdwfl: %s)", name, dwfl_errmsg(-1));
		return -ENOENT;
	}
	return kfunc_file_params(file, name, sig, why, whysz);
}

static int lookup(const char *module, const char *name, struct kfunc_sig *sig, char *why, size_t whysz)
{
	struct find f = { module, name, NULL, 0, false };
	struct utsname u;
	Dwarf_Die *cu, fn;
	Dwarf_Addr bias;
	Dwfl *d = kernel_dwfl();

	if (!d) {
		snprintf(why, whysz, "libdwfl: %s", dwfl_errmsg(-1));
		return -ENOENT;
	}
	dwfl_getmodules(d, find_symbol, &f, 0);
	uname(&u);
	if (!f.mod) {
		if ((!module || !strcmp(module, "vmlinux")) && !f.image_symbols)
			snprintf(why, whysz,
				 "no debug information for the kernel %s (its vmlinux: install its debug symbols, "
				 "e.g. /usr/lib/debug/boot/vmlinux-%s)",
				 u.release, u.release);
		else
			snprintf(why, whysz, "no symbol '%s' in the debug information of %s", name,
				 module ? module : "the kernel or its modules");
		return -ENOENT;
	}
	if (!(cu = dwfl_module_addrdie(f.mod, f.addr, &bias)) || !subprogram_at(cu, f.addr - bias, &fn))
		return offline_params(f.mod, name, sig, why, whysz);
	return params_of(&fn, sig, why, whysz);
}

int kfunc_params(const char *module, const char *name, const struct kfunc_sig **sig, const char **why)
{
	char key[256];
	struct cached *c, *v;

	snprintf(key, sizeof(key), "%s:%s", module ? module : "", name);
	for (size_t i = 0; i < ncache; i++)
		if (!strcmp(cache[i].key, key)) {
			*sig = &cache[i].sig;
			*why = cache[i].why;
			return cache[i].err;
		}
	if (!(v = realloc(cache, (ncache + 1) * sizeof(*v))))
		abort();
	cache = v;
	c = &cache[ncache++];
	memset(c, 0, sizeof(*c));
	if (!(c->key = strdup(key)))
		abort();
	c->err = lookup(module, name, &c->sig, c->why, sizeof(c->why));
	*sig = &c->sig;
	*why = c->why;
	return c->err;
}

int kfunc_point_params(const char *point, const struct kfunc_sig **sig, bool *ret, const char **why)
{
	char buf[256], *colon, *name = buf, *module = NULL, *plus;
	const char *p = strncmp(point, "func:", 5) ? point : point + 5;
	size_t n = strlen(p);

	*ret = n > 7 && !strcmp(p + n - 7, "%return");
	snprintf(buf, sizeof(buf), "%.*s", (int)(*ret ? n - 7 : n), p);
	if ((colon = strchr(buf, ':'))) {
		*colon = 0;
		module = buf;
		name = colon + 1;
	}
	if ((plus = strchr(name, '+'))) {
		if (strtoul(plus + 1, NULL, 0)) {
			*why = "its parameters are in their registers at the function's entry (+0) only";
			return -ENOTSUP;
		}
		*plus = 0;
	}
	return kfunc_params(module, name, sig, why);
}

int64_t kfunc_arg_value(const struct kfunc_arg *a, uint64_t reg)
{
	unsigned bits = a->size * 8u;
	if (!bits || bits >= 64)
		return (int64_t)reg;
	reg &= (1ull << bits) - 1;
	if (a->is_signed && (reg >> (bits - 1)) & 1)
		reg |= ~0ull << bits;
	return (int64_t)reg;
}

int kfunc_format(const struct kfunc_sig *sig, bool ret, char *buf, size_t sz)
{
	size_t len = 0;
	if (ret)
		return sig->has_ret ? snprintf(buf, sz, "return=%s", sig->ret.conv) : -1;
	buf[0] = 0;
	for (unsigned i = 0; i < sig->nargs && len < sz; i++) {
		const char *name = sig->arg[i].name[0] ? sig->arg[i].name : NULL;
		char dflt[16];
		if (!name) {
			snprintf(dflt, sizeof(dflt), "arg%u", i + 1);
			name = dflt;
		}
		len += (size_t)snprintf(buf + len, sz - len, "%s%s=%s", i ? " " : "", name, sig->arg[i].conv);
	}
	return len < sz ? (int)len : -1;
}
