/*
 * Interposing after the fact: a library that was injected (dlopen'd into a
 * running program, tools/djp/attach/inject.c) points the program's calls to the
 * functions it interposes at itself, by rewriting their GOT slots.
 *
 * Why.  The engine keeps SIGTRAP (and, for the safe string copy, SIGSEGV
 * and SIGBUS) deliverable and its handlers installed by interposing
 * sigprocmask, pthread_sigmask, sigaction and signal; it hears of
 * objects that come and go by interposing dlopen and dlclose; and it sees
 * threads begin and end by interposing pthread_create (kernel/sigmask.c,
 * kernel/dlhooks.c, kernel/threads.c).  Preloaded or linked, the library
 * comes first in the lookup order and the loader binds the program's calls
 * to it.  Injected, it comes after everything the calls were bound to, and
 * a program that blocks every signal while it works (PostgreSQL's
 * postmaster forks its backends with all of them blocked) would make every
 * probe in its children unarmable.
 *
 * How.  For each loaded object but this library, libc and the loader (their
 * calls to these functions do not go through their GOT), walk the dynamic
 * section's relocations: the PLT's (DT_JMPREL, R_X86_64_JUMP_SLOT) and the
 * others (DT_RELA, R_X86_64_GLOB_DAT: a call through -fno-plt, or the
 * function's address taken).  A relocation whose symbol is one of ours
 * names a GOT slot, which gets our function's address: an aligned 8-byte
 * store, which a thread calling through the slot at that moment sees
 * whole, old or new.  A slot in the RELRO segment (a program linked with
 * -z now) is made writable for the store and read-only again.  A lazily
 * bound slot that still points into the PLT is simply bound early.
 *
 * The loader keeps the dynamic section's addresses relocated in place on
 * x86-64; a value below the object's base is a link-time one and gets the
 * base added (a read-only dynamic section is left as the linker wrote it).
 *
 * Objects loaded later are patched when the engine learns of them
 * (djp__engine_objects_changed: the dlopen interposer, once patched, or the
 * agent's poll of the loader's count); a constructor of such an object that
 * runs inside dlopen runs before that.  Nothing is ever unpatched: the
 * library stays loaded, and its interposers pass calls through when no
 * probe is armed.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernel/interpose.h"

/* Our interposers, by their hidden names (kernel/sigmask.c,
 * kernel/dlhooks.c): the exported names would resolve to libc's here. */
static const struct {
	const char *name;
	void *fn;
} ours[] = {
	{ "sigprocmask", (void *)djp__sigprocmask },
	{ "pthread_sigmask", (void *)djp__pthread_sigmask },
	{ "sigaction", (void *)djp__sigaction },
	{ "signal", (void *)djp__signal },
	{ "dlopen", (void *)djp__dlopen },
	{ "dlclose", (void *)djp__dlclose },
	{ "pthread_create", (void *)djp__pthread_create },
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int state; /* 0 not looked, 1 interposed by the loader, 2 by us */

/* Is the program's sigprocmask ours (preloaded, linked)? */
static bool loader_interposes(void)
{
	return dlsym(RTLD_DEFAULT, "sigprocmask") == (void *)djp__sigprocmask;
}

static bool is_skipped(const char *name, const Dl_info *self)
{
	const char *b = strrchr(name, '/');
	b = b ? b + 1 : name;
	return !strncmp(b, "ld-linux", 8) || !strncmp(b, "libc.so", 7) || !strncmp(b, "linux-vdso", 10) ||
	       (self->dli_fname && !strcmp(name, self->dli_fname));
}

struct walk {
	uintptr_t base, relro_lo, relro_hi;
	const ElfW(Sym) *symtab;
	const char *strtab;
};

static uintptr_t dyn_ptr(const struct walk *w, ElfW(Addr) v)
{
	return v < w->base ? w->base + v : v;
}

static void *ours_for(const char *name)
{
	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		if (!strcmp(name, ours[i].name))
			return ours[i].fn;
	return NULL;
}

static void patch_slot(struct walk *w, void **slot, void *fn)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t page = (uintptr_t)slot & ~(uintptr_t)(pg - 1);
	bool relro = (uintptr_t)slot >= w->relro_lo && (uintptr_t)slot < w->relro_hi;

	if (__atomic_load_n(slot, __ATOMIC_RELAXED) == fn)
		return;
	if (relro && mprotect((void *)page, (size_t)pg, PROT_READ | PROT_WRITE))
		return;
	__atomic_store_n(slot, fn, __ATOMIC_RELEASE);
	if (relro)
		mprotect((void *)page, (size_t)pg, PROT_READ);
}

static void walk_relas(struct walk *w, const ElfW(Rela) *r, size_t bytes)
{
	for (size_t i = 0; i < bytes / sizeof(*r); i++) {
		unsigned type = ELF64_R_TYPE(r[i].r_info), sym = ELF64_R_SYM(r[i].r_info);
		void *fn;
		if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) || !sym)
			continue;
		if ((fn = ours_for(w->strtab + w->symtab[sym].st_name)))
			patch_slot(w, (void **)(w->base + r[i].r_offset), fn);
	}
}

static int patch_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	const Dl_info *self = arg;
	const ElfW(Dyn) *dyn = NULL;
	struct walk w = { .base = info->dlpi_addr };
	const ElfW(Rela) *jmprel = NULL, *rela = NULL;
	size_t jmprel_sz = 0, rela_sz = 0;
	(void)size;

	if (!info->dlpi_name || is_skipped(info->dlpi_name, self))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
		else if (ph->p_type == PT_GNU_RELRO) {
			w.relro_lo = info->dlpi_addr + ph->p_vaddr;
			w.relro_hi = w.relro_lo + ph->p_memsz;
		}
	}
	if (!dyn)
		return 0; /* a static program's: nothing bound at run time */
	for (; dyn->d_tag != DT_NULL; dyn++) {
		switch (dyn->d_tag) {
		case DT_SYMTAB: w.symtab = (const ElfW(Sym) *)dyn_ptr(&w, dyn->d_un.d_ptr); break;
		case DT_STRTAB: w.strtab = (const char *)dyn_ptr(&w, dyn->d_un.d_ptr); break;
		case DT_JMPREL: jmprel = (const ElfW(Rela) *)dyn_ptr(&w, dyn->d_un.d_ptr); break;
		case DT_PLTRELSZ: jmprel_sz = dyn->d_un.d_val; break;
		case DT_RELA: rela = (const ElfW(Rela) *)dyn_ptr(&w, dyn->d_un.d_ptr); break;
		case DT_RELASZ: rela_sz = dyn->d_un.d_val; break;
		}
	}
	if (!w.symtab || !w.strtab)
		return 0;
	if (jmprel)
		walk_relas(&w, jmprel, jmprel_sz);
	if (rela)
		walk_relas(&w, rela, rela_sz);
	return 0;
}

int djp_got_interpose(void)
{
	Dl_info self;
	pthread_mutex_lock(&lock);
	if (!state)
		state = loader_interposes() ? 1 : 2;
	if (state == 2 && dladdr((void *)djp_got_interpose, &self))
		dl_iterate_phdr(patch_object, &self);
	pthread_mutex_unlock(&lock);
	return 0;
}

bool djp_interposing(void)
{
	int s;
	pthread_mutex_lock(&lock);
	if (!state && loader_interposes())
		state = 1;
	s = state; /* 2 only once the slots were written */
	pthread_mutex_unlock(&lock);
	return s != 0;
}
