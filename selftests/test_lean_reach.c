/*
 * What a lean hit can reach, read from the built library: no vector or
 * x87 instruction, and no call into another object but the listed ones.
 *
 * The lean trampoline saves the general registers only, so everything it
 * runs must leave the vector state alone.  The files it runs are compiled
 * for general registers only, which keeps the compiler from using a
 * vector register there, but not from calling code that does: libc's
 * string functions (AVX2, EVEX), or a memcpy the compiler makes of a
 * struct copy.  So this test decodes libdjprobe.so (Zydis, libelf) from
 * the functions a lean trampoline calls, follows every direct call and
 * jump to the functions they reach, and fails on any instruction with a
 * vector, mask, MMX or x87 register operand, and on any call through the
 * PLT or the GOT to a symbol not in `libc_ok` (system call wrappers and
 * the like, which leave vector state alone).  A function in `saved` is
 * one whose callers save the vector state around it (arch_vector_save):
 * it is not followed.  Indirect calls through a register are the
 * handlers, each a root here if it is ours.
 */
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <Zydis/Zydis.h>

#include "harness.h"

/* What the lean trampolines and the return trampoline (arch/x86/
 * ret_tramp.S) call, and the handlers that promise DJP_GPR_ONLY
 * (kernel/dispatch.c, retprobes.c, agent/recorder.c, agent/agg.c;
 * safe_copy.c's ring_copy is the ring's copy hook). */
static const char *const roots[] = {
	"djp_dispatch_lean", "djp_run_lean_list", "djp_recorder_hit", "djp_recorder_hit_stack",
	"recorder_fast0",    "recorder_fast1",	  "recorder_fast2",   "recorder_fast3",
	"recorder_fast4",    "recorder_typed0",	  "recorder_typed1",  "recorder_typed2",
	"recorder_typed3",   "recorder_typed4",	  "recorder_typed_one0", "recorder_typed_one1",
	"recorder_typed_one2", "recorder_typed_one3", "recorder_typed_one4",
	"djp_agg_hit",	     "agg_fast",	  "agg_fast_named",
	"ring_copy",	     "ret_hook",	  "djp_ret_unwinder_hook", "djp_ret_catch_hook",
	"djp_ret_dispatch",
};

/* Called only between arch_vector_save and arch_vector_restore. */
static const char *const saved[] = {
	"register_thread",	 /* kernel/rcu.c: djp_rcu_register */
	"match_string_patterns", /* kernel/agent/recorder.c */
	"walk",			 /* kernel/callee_saved.c: djp_callee_saved_reg */
	"djp_trap_probe",	 /* kernel/retprobes.c: djp_ret_dispatch, any handler */
};

/* Calls that only a dying process makes: kernel/retprobes.c's ret_lost,
 * inlined in its caller (its cold part, with gcc), says why and aborts. */
static const struct {
	const char *in, *calls;
} dying[] = {
	{ "djp_ret_dispatch", "snprintf" },
	{ "djp_ret_dispatch", "write" },
	{ "djp_ret_dispatch", "abort" },
};

static bool dies(const char *in, const char *calls)
{
	for (size_t i = 0; i < sizeof(dying) / sizeof(dying[0]); i++)
		if (strlen(dying[i].in) == strcspn(in, ".") && !strncmp(dying[i].in, in, strcspn(in, ".")) &&
		    !strcmp(dying[i].calls, calls))
			return true;
	return false;
}

/* Other objects' functions that use no vector register: system call
 * wrappers, the vDSO's clock (built without SSE), the rseq area's CPU,
 * and a thread-specific value of a key among glibc's first 32, which it
 * sets without allocating (lib/ring.c, kernel/rcu.c and retprobes.c
 * refuse a key past them). */
static const char *const libc_ok[] = {
	"syscall", "__errno_location", "getpid", "mmap", "munmap", "clock_gettime", "sched_getcpu", "pthread_setspecific",
};

struct fn {
	const char *name;
	uint64_t lo, hi;
	int state; /* 0 unseen, 1 queued */
};

struct image {
	struct fn *fn;
	size_t nfn;
	struct {
		uint64_t addr, size;
		const uint8_t *data;
	} text[16];
	int ntext;
	struct {
		uint64_t slot;
		const char *name;
	} *got;
	size_t ngot;
};

static bool listed(const char *const *list, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i], name))
			return true;
	return false;
}

static struct fn *fn_at(struct image *im, uint64_t a)
{
	for (size_t i = 0; i < im->nfn; i++)
		if (a >= im->fn[i].lo && a < im->fn[i].hi)
			return &im->fn[i];
	return NULL;
}

static struct fn *fn_named(struct image *im, const char *name)
{
	for (size_t i = 0; i < im->nfn; i++)
		if (!strcmp(im->fn[i].name, name))
			return &im->fn[i];
	return NULL;
}

static const uint8_t *bytes_at(struct image *im, uint64_t a, size_t *left)
{
	for (int i = 0; i < im->ntext; i++)
		if (a >= im->text[i].addr && a < im->text[i].addr + im->text[i].size) {
			*left = im->text[i].addr + im->text[i].size - a;
			return im->text[i].data + (a - im->text[i].addr);
		}
	return NULL;
}

static const char *got_name(struct image *im, uint64_t slot)
{
	for (size_t i = 0; i < im->ngot; i++)
		if (im->got[i].slot == slot)
			return im->got[i].name;
	return NULL;
}

static void load(struct image *im, Elf *e)
{
	Elf_Scn *scn = NULL;
	size_t shstr;

	CHECK(elf_getshdrstrndx(e, &shstr) == 0);
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		CHECK(gelf_getshdr(scn, &sh) != NULL);
		d = elf_getdata(scn, NULL);
		if (sh.sh_type == SHT_PROGBITS && (sh.sh_flags & SHF_EXECINSTR) && im->ntext < 16 && d) {
			im->text[im->ntext].addr = sh.sh_addr;
			im->text[im->ntext].size = d->d_size;
			im->text[im->ntext++].data = d->d_buf;
		} else if (sh.sh_type == SHT_SYMTAB && d) {
			size_t n = sh.sh_size / sh.sh_entsize;
			im->fn = realloc(im->fn, (im->nfn + n) * sizeof(*im->fn));
			CHECK(im->fn != NULL);
			for (size_t i = 0; i < n; i++) {
				GElf_Sym s;
				if (gelf_getsym(d, (int)i, &s) && GELF_ST_TYPE(s.st_info) == STT_FUNC && s.st_size &&
				    s.st_shndx != SHN_UNDEF)
					im->fn[im->nfn++] = (struct fn){ elf_strptr(e, sh.sh_link, s.st_name), s.st_value,
									 s.st_value + s.st_size, 0 };
			}
		} else if (sh.sh_type == SHT_RELA && d) {
			/* JUMP_SLOT (the PLT's) and GLOB_DAT (-fno-plt, a
			 * function's address) slots, by the symbol they hold */
			GElf_Shdr symh;
			Elf_Scn *syms = elf_getscn(e, sh.sh_link);
			Elf_Data *sd = syms ? elf_getdata(syms, NULL) : NULL;
			size_t n = sh.sh_size / sh.sh_entsize;
			CHECK(sd != NULL && gelf_getshdr(syms, &symh) != NULL);
			im->got = realloc(im->got, (im->ngot + n) * sizeof(*im->got));
			CHECK(im->got != NULL);
			for (size_t i = 0; i < n; i++) {
				GElf_Rela r;
				GElf_Sym s;
				if (!gelf_getrela(d, (int)i, &r) || !GELF_R_SYM(r.r_info) ||
				    !gelf_getsym(sd, (int)GELF_R_SYM(r.r_info), &s))
					continue;
				im->got[im->ngot].slot = r.r_offset;
				im->got[im->ngot++].name = elf_strptr(e, symh.sh_link, s.st_name);
			}
		}
	}
}

/* The GOT slot an instruction jumps or calls through ([rip + disp]), 0
 * when it does not. */
static uint64_t slot_of(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *op, uint64_t at)
{
	uint64_t a;
	if (op->type != ZYDIS_OPERAND_TYPE_MEMORY || op->mem.base != ZYDIS_REGISTER_RIP ||
	    ZYAN_FAILED(ZydisCalcAbsoluteAddress(in, op, at, &a)))
		return 0;
	return a;
}

/* The function a PLT stub at `a` goes to: its jmp *slot(%rip), after an
 * endbr64 and a bnd prefix. */
static const char *plt_name(struct image *im, const ZydisDecoder *dec, uint64_t a)
{
	ZydisDecodedInstruction in;
	ZydisDecodedOperand op[ZYDIS_MAX_OPERAND_COUNT];
	size_t left;
	const uint8_t *p = bytes_at(im, a, &left);

	for (int k = 0; p && k < 2; k++) {
		if (ZYAN_FAILED(ZydisDecoderDecodeFull(dec, p, left, &in, op)))
			return NULL;
		if (in.mnemonic == ZYDIS_MNEMONIC_JMP)
			return got_name(im, slot_of(&in, &op[0], a));
		a += in.length, p += in.length, left -= in.length;
	}
	return NULL;
}

static bool vector_reg(ZydisRegister r)
{
	switch (ZydisRegisterGetClass(r)) {
	case ZYDIS_REGCLASS_X87:
	case ZYDIS_REGCLASS_MMX:
	case ZYDIS_REGCLASS_XMM:
	case ZYDIS_REGCLASS_YMM:
	case ZYDIS_REGCLASS_ZMM:
	case ZYDIS_REGCLASS_MASK:
		return true;
	default:
		return false;
	}
}

/* Decode f, queue what it calls; returns how many faults it printed. */
static int walk_fn(struct image *im, const ZydisDecoder *dec, struct fn *f, struct fn **queue, size_t *nq)
{
	size_t left;
	const uint8_t *p = bytes_at(im, f->lo, &left);
	int bad = 0;

	CHECK(p != NULL);
	left = f->hi - f->lo;
	for (uint64_t at = f->lo; at < f->hi;) {
		ZydisDecodedInstruction in;
		ZydisDecodedOperand op[ZYDIS_MAX_OPERAND_COUNT];
		uint64_t to;
		if (ZYAN_FAILED(ZydisDecoderDecodeFull(dec, p, left, &in, op))) {
			at++, p++, left--;
			continue;
		}
		for (unsigned i = 0; i < in.operand_count; i++) {
			const ZydisDecodedOperand *o = &op[i];
			if ((o->type == ZYDIS_OPERAND_TYPE_REGISTER && vector_reg(o->reg.value)) ||
			    (o->type == ZYDIS_OPERAND_TYPE_MEMORY && (vector_reg(o->mem.base) || vector_reg(o->mem.index)))) {
				printf("# %s+%#lx: an instruction on vector or x87 state\n", f->name,
				       (unsigned long)(at - f->lo));
				bad++;
				break;
			}
		}
		if (in.meta.category == ZYDIS_CATEGORY_CALL || in.meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
		    in.meta.category == ZYDIS_CATEGORY_COND_BR) {
			const char *ext = NULL;
			uint64_t slot;
			if (op[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
			    ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&in, &op[0], at, &to)) && (to < f->lo || to >= f->hi)) {
				struct fn *g = fn_at(im, to);
				if (g && !g->state && !listed(saved, sizeof(saved) / sizeof(saved[0]), g->name)) {
					g->state = 1;
					queue[(*nq)++] = g;
				} else if (!g && !(ext = plt_name(im, dec, to))) {
					printf("# %s+%#lx: a branch to %#lx, in no function\n", f->name,
					       (unsigned long)(at - f->lo), (unsigned long)to);
					bad++;
				}
			} else if ((slot = slot_of(&in, &op[0], at))) {
				ext = got_name(im, slot);
				if (!ext) {
					printf("# %s+%#lx: an indirect branch through %#lx\n", f->name,
					       (unsigned long)(at - f->lo), (unsigned long)slot);
					bad++;
				}
			}
			if (ext && !listed(libc_ok, sizeof(libc_ok) / sizeof(libc_ok[0]), ext) && !dies(f->name, ext)) {
				printf("# %s+%#lx: calls %s, which is not known to leave vector state alone\n", f->name,
				       (unsigned long)(at - f->lo), ext);
				bad++;
			}
		}
		at += in.length, p += in.length, left -= in.length;
	}
	return bad;
}

TEST(lean_reach_no_vector_state_no_libc)
{
	struct image im = { 0 };
	ZydisDecoder dec;
	struct fn **queue;
	size_t nq = 0, done = 0;
	int fd, bad = 0;
	Elf *e;

	CHECK(elf_version(EV_CURRENT) != EV_NONE);
	CHECK((fd = open(djp_test_path("../libdjprobe.so"), O_RDONLY)) >= 0);
	CHECK((e = elf_begin(fd, ELF_C_READ, NULL)) != NULL);
	load(&im, e);
	CHECK(im.nfn > 100 && im.ngot > 10);
	CHECK(ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)));
	CHECK((queue = calloc(im.nfn, sizeof(*queue))) != NULL);
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		struct fn *f = fn_named(&im, roots[i]);
		if (!f)
			djp_test_fail(__FILE__, __LINE__, "libdjprobe.so has no function %s", roots[i]);
		if (!f->state) {
			f->state = 1;
			queue[nq++] = f;
		}
	}
	for (const char *const *s = saved; s < saved + sizeof(saved) / sizeof(saved[0]); s++)
		if (!fn_named(&im, *s))
			djp_test_fail(__FILE__, __LINE__, "libdjprobe.so has no function %s", *s);
	while (done < nq)
		bad += walk_fn(&im, &dec, queue[done++], queue, &nq);
	printf("# %zu functions reachable from a lean hit\n", nq);
	CHECK(nq > 30);
	CHECK_EQ(bad, 0);
	free(queue);
	free(im.fn);
	free(im.got);
	elf_end(e);
	close(fd);
}
