/* The stack walker (kernel/unwind.c) and its tables (lib/unwind_table.c).
 * Expected values come from elsewhere: readelf's interpretation of the same
 * call-frame information, glibc's backtrace() (libgcc's unwinder) and
 * __builtin_return_address at the same point, the ucontext the kernel
 * hands a signal handler, the restorer's bytes, dladdr. */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>

#include "djprobe/djprobe.h"
#include "djprobe/marker.h"
#include "harness.h"
#include "kernel/engine.h"
#include "kernel/probes.h"
#include "kernel/unwind.h"
#include "lib/unwind_table.h"

#define NOIPA __attribute__((noipa))
#define MAXF 64

/* ---- (a) the table against readelf --------------------------------------- */

/* One row as readelf --debug-dump=frames-interp prints it, and which
 * section it is in (0 .eh_frame, 1 .debug_frame). */
struct re_row {
	uint64_t addr, end;
	char cfa[32], rbp[32], ra[32];
	bool signal;
	int sec;
};

struct re_cie {
	unsigned long off;
	bool signal;
	struct re_row init; /* its one row: what an FDE without rows says */
};

struct re_fde {
	uint64_t lo, hi;
	int sec;
};

struct re_dump {
	struct re_row *rows;
	size_t n, cap;
	struct re_cie cies[4096];
	size_t ncies;
	struct re_fde *fdes;
	size_t nfdes, fcap;
};

/* Growing arrays of rows and FDE ranges. */
static void push_row(struct re_dump *d, const struct re_row *r)
{
	if (d->n == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 4096;
		d->rows = realloc(d->rows, d->cap * sizeof(*d->rows));
		CHECK(d->rows != NULL);
	}
	d->rows[d->n++] = *r;
}

static void push_fde(struct re_dump *d, uint64_t lo, uint64_t hi, int sec)
{
	if (d->nfdes == d->fcap) {
		d->fcap = d->fcap ? 2 * d->fcap : 1024;
		d->fdes = realloc(d->fdes, d->fcap * sizeof(*d->fdes));
		CHECK(d->fdes != NULL);
	}
	d->fdes[d->nfdes++] = (struct re_fde){ lo, hi, sec };
}

/* The columns of a row line, by the header line's names. */
static void row_columns(char *line, char cols[][16], int ncols, struct re_row *r)
{
	char *tok, *save;
	int i = 0;
	strcpy(r->rbp, "u"); /* no column: never saved */
	r->cfa[0] = r->ra[0] = 0;
	for (tok = strtok_r(line, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save), i++) {
		if (tok[0] == '(') { /* "r10 (r10)": one column, the name of the one before */
			i--;
			continue;
		}
		if (i == 0)
			r->addr = strtoull(tok, NULL, 16);
		else if (i < ncols && !strcmp(cols[i], "CFA"))
			snprintf(r->cfa, sizeof(r->cfa), "%s", tok);
		else if (i < ncols && !strcmp(cols[i], "rbp"))
			snprintf(r->rbp, sizeof(r->rbp), "%s", tok);
		else if (i < ncols && !strcmp(cols[i], "ra"))
			snprintf(r->ra, sizeof(r->ra), "%s", tok);
	}
}

/* Close the FDE being read: its rows end where the next begins, the last
 * at the FDE's end; an FDE without rows has its CIE's. */
static void close_fde(struct re_dump *d, size_t first, uint64_t lo, uint64_t hi, const struct re_cie *cie, int sec)
{
	if (!hi)
		return;
	if (d->n == first && cie) {
		struct re_row r = cie->init;
		r.addr = lo;
		push_row(d, &r);
	}
	for (size_t i = first; i < d->n; i++) {
		d->rows[i].end = i + 1 < d->n ? d->rows[i + 1].addr : hi;
		d->rows[i].signal = cie && cie->signal;
		d->rows[i].sec = sec;
	}
	push_fde(d, lo, hi, sec);
}

/* Every CIE, FDE and row readelf prints for the file's .eh_frame (not
 * its debug file's: -wN). */
static void readelf_frames(const char *path, struct re_dump *d)
{
	char cmd[PATH_MAX + 64], line[1024], cols[32][16];
	int ncols = 0;
	size_t first = 0;
	uint64_t lo = 0, hi = 0;
	struct re_cie *cie = NULL, *fde_cie = NULL;
	int sec = 0;
	FILE *p;

	memset(d, 0, sizeof(*d));
	snprintf(cmd, sizeof(cmd), "readelf -wN --debug-dump=frames-interp '%s' 2>/dev/null", path);
	CHECK((p = popen(cmd, "r")) != NULL);
	while (fgets(line, sizeof(line), p)) {
		unsigned long ciep;
		unsigned long long a, b;
		char *q;
		if (!strncmp(line, "Contents of the ", 16)) { /* CIE offsets are per section */
			close_fde(d, first, lo, hi, fde_cie, sec);
			hi = 0;
			cie = fde_cie = NULL;
			d->ncies = 0;
			sec = !!strstr(line, ".debug_frame");
		} else if ((q = strstr(line, " CIE \""))) {
			close_fde(d, first, lo, hi, fde_cie, sec);
			hi = 0;
			fde_cie = NULL;
			CHECK(d->ncies < sizeof(d->cies) / sizeof(d->cies[0]));
			cie = &d->cies[d->ncies++];
			memset(cie, 0, sizeof(*cie));
			cie->off = strtoul(line, NULL, 16);
			cie->signal = strchr(q + 6, 'S') && strchr(q + 6, 'S') < strchr(q + 6, '"');
		} else if ((q = strstr(line, " FDE cie=")) &&
			   sscanf(q, " FDE cie=%lx pc=%llx..%llx", &ciep, &a, &b) == 3) {
			close_fde(d, first, lo, hi, fde_cie, sec);
			cie = NULL;
			fde_cie = NULL;
			for (size_t i = 0; i < d->ncies; i++)
				if (d->cies[i].off == ciep)
					fde_cie = &d->cies[i];
			CHECK(fde_cie != NULL);
			first = d->n;
			lo = a;
			hi = b;
		} else if (!strncmp(line, "   LOC", 6)) {
			char *tok, *save;
			ncols = 0;
			for (tok = strtok_r(line, " \t\n", &save); tok && ncols < 32; tok = strtok_r(NULL, " \t\n", &save))
				snprintf(cols[ncols++], sizeof(cols[0]), "%s", tok);
		} else if (strlen(line) > 17 && line[16] == ' ' && strspn(line, "0123456789abcdef") == 16) {
			struct re_row r = { 0 };
			row_columns(line, cols, ncols, &r);
			if (cie)
				cie->init = r; /* the CIE's own row */
			else if (hi)
				push_row(d, &r);
		}
	}
	close_fde(d, first, lo, hi, fde_cie, sec);
	CHECK(pclose(p) == 0);
	CHECK(d->nfdes > 0);
}

/* What a readelf row means for the walker. */
static struct djp_uw_row expected_row(const struct re_row *r)
{
	struct djp_uw_row w = { .cfa = DJP_UW_UNKNOWN, .rbp = DJP_UW_RBP_LOST };
	int off, end = 0;
	if (r->signal) {
		w.cfa = DJP_UW_SIGNAL;
		return w;
	}
	if (!strcmp(r->ra, "u")) {
		w.cfa = DJP_UW_END;
		return w;
	}
	if (strcmp(r->ra, "c-8"))
		return w;
	if (sscanf(r->cfa, "rsp+%d%n", &off, &end) == 1 && !r->cfa[end])
		w.cfa = DJP_UW_CFA_RSP;
	else if (sscanf(r->cfa, "rbp+%d%n", &off, &end) == 1 && !r->cfa[end])
		w.cfa = DJP_UW_CFA_RBP;
	else
		return w;
	w.cfa_off = off;
	if (!strcmp(r->rbp, "u") || !strcmp(r->rbp, "s")) {
		w.rbp = DJP_UW_RBP_SAME;
	} else if (sscanf(r->rbp, "c%d%n", &off, &end) == 1 && !r->rbp[end]) {
		w.rbp = DJP_UW_RBP_SAVED;
		w.rbp_off = (int16_t)off;
	}
	return w;
}

/* The table's row at addr says what readelf's does. */
static void check_row(const struct djp_unwind_table *t, uint64_t addr, const struct djp_uw_row *want,
		      const struct re_row *r)
{
	const struct djp_uw_row *got = djp_unwind_table_find(t, addr);
	bool ok = got && got->cfa == want->cfa;
	if (ok && (want->cfa == DJP_UW_CFA_RSP || want->cfa == DJP_UW_CFA_RBP))
		ok = got->cfa_off == want->cfa_off && got->rbp == want->rbp &&
		     (want->rbp != DJP_UW_RBP_SAVED || got->rbp_off == want->rbp_off);
	if (!ok)
		djp_test_fail(__FILE__, __LINE__, "at %#llx: readelf says CFA %s rbp %s ra %s; table %d%+d rbp %d%+d",
			      (unsigned long long)addr, r->cfa, r->rbp, r->ra, got ? got->cfa : -1,
			      got ? got->cfa_off : 0, got ? got->rbp : -1, got ? got->rbp_off : 0);
}

/* FDEs by start: overlaps and gaps show between neighbours. */
static int cmp_fde(const void *a, const void *b)
{
	const struct re_fde *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Does an FDE of `secs` cover addr (the end of another: then it is no
 * gap)? */
static bool covered(const struct re_dump *d, uint64_t addr, unsigned secs)
{
	for (size_t i = 0; i < d->nfdes; i++)
		if ((secs >> d->fdes[i].sec & 1) && d->fdes[i].lo <= addr && addr < d->fdes[i].hi)
			return true;
	return false;
}

/* Every row readelf printed for the sections of `secs` (bit 0 .eh_frame,
 * bit 1 .debug_frame), at its first and last address, against the table;
 * the end of every FDE that nothing follows is unknown; the table read
 * every FDE readelf lists there. */
static void check_table(const char *what, const struct djp_unwind_table *t, struct re_dump *d, unsigned secs)
{
	size_t rows = 0, fdes = 0, gaps = 0;
	uint64_t prev_hi = 0;

	for (size_t i = 0; i < d->nfdes; i++)
		fdes += (secs >> d->fdes[i].sec & 1) && d->fdes[i].lo && d->fdes[i].hi > d->fdes[i].lo;
	CHECK_EQ(t->nfdes, fdes);
	for (size_t i = 0; i < d->n; i++) {
		const struct re_row *r = &d->rows[i];
		struct djp_uw_row want = expected_row(r);
		if (!(secs >> r->sec & 1) || !r->addr || r->end <= r->addr)
			continue;
		check_row(t, r->addr, &want, r);
		check_row(t, r->end - 1, &want, r);
		rows++;
	}
	qsort(d->fdes, d->nfdes, sizeof(d->fdes[0]), cmp_fde);
	for (size_t i = 0; i < d->nfdes; i++) {
		const struct djp_uw_row *got;
		if (!(secs >> d->fdes[i].sec & 1))
			continue;
		CHECK(d->fdes[i].lo >= prev_hi); /* no overlap, else rows above would differ */
		prev_hi = d->fdes[i].hi;
		if (covered(d, d->fdes[i].hi, secs))
			continue;
		got = djp_unwind_table_find(t, d->fdes[i].hi);
		CHECK(!got || got->cfa == DJP_UW_UNKNOWN);
		gaps++;
	}
	fprintf(stderr, "# %s: %zu readelf rows and %zu gaps agree; table %u rows, %u FDEs\n", what, rows, gaps, t->n,
		t->nfdes);
	CHECK(rows > 0);
}

/* The table of `path`, read here. */
static struct djp_unwind_table *table_of(const char *path)
{
	struct djp_unwind_table *t;
	char err[512] = "";
	int ret = djp_unwind_table_build(path, &t, err, sizeof(err));
	if (ret)
		fprintf(stderr, "# %s\n", err);
	CHECK_EQ(ret, 0);
	return t;
}

/* The table of `path` says what readelf says of the same file. */
static void check_against_readelf(const char *path)
{
	struct djp_unwind_table *t = table_of(path);
	struct re_dump d;
	readelf_frames(path, &d);
	check_table(path, t, &d, 3);
	free(d.rows);
	free(d.fdes);
	djp_unwind_table_free(t);
}

/* libc's file, by a function of its. */
static const char *libc_path(void)
{
	Dl_info info;
	CHECK(dladdr((void *)qsort, &info) && info.dli_fname);
	return info.dli_fname;
}

TEST(unwind_table_matches_readelf)
{
	check_against_readelf(djp_test_path("progs/func_targets"));
	check_against_readelf(djp_test_path("progs/func_targets-O0"));
	{
		char self[PATH_MAX];
		CHECK(realpath("/proc/self/exe", self) != NULL);
		check_against_readelf(self);
	}
	check_against_readelf(libc_path());
}

/* A shell command's exit status, the command printed when it fails. */
static int run(const char *cmd)
{
	int st = system(cmd);
	if (st)
		fprintf(stderr, "# %s: status %#x\n", cmd, st);
	return st;
}

/* Code built without unwind tables has its FDEs in .debug_frame, the C
 * runtime's in .eh_frame: the table has both.  Stripped of both, with its
 * debug file beside it (.gnu_debuglink, the same build-id), it has the
 * debug file's .debug_frame. */
TEST(unwind_table_debug_frame_and_debug_file)
{
	static const char src[] =
		"#include <stdio.h>\n"
		"__attribute__((noinline)) static int f(int x)\n"
		"{ char *p = __builtin_alloca(x); p[0] = (char)x; printf(\"%d\\n\", p[0]); return p[0] + 1; }\n"
		"__attribute__((noinline)) int g(int x) { return f(x + 1) * 2; }\n"
		"int main(int argc, char **argv) { (void)argv; return g(argc) == 3; }\n";
	char dir[] = "/tmp/djp-unwind-XXXXXX", cmd[4 * PATH_MAX], prog[PATH_MAX], stripped[PATH_MAX];
	struct djp_unwind_table *t;
	struct re_dump d;
	size_t per_sec[2] = { 0, 0 };
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(prog, sizeof(prog), "%s/prog", dir);
	snprintf(stripped, sizeof(stripped), "%s/prog.stripped", dir);
	snprintf(cmd, sizeof(cmd), "%s/prog.c", dir);
	CHECK((f = fopen(cmd, "w")) != NULL);
	CHECK(fputs(src, f) >= 0);
	CHECK(fclose(f) == 0);
	snprintf(cmd, sizeof(cmd), "cd '%s' && gcc -g -O2 -fno-asynchronous-unwind-tables -o prog prog.c", dir);
	if (run(cmd))
		djp_test_fail(__FILE__, __LINE__, "gcc failed: %s", cmd);
	readelf_frames(prog, &d);
	for (size_t i = 0; i < d.nfdes; i++)
		per_sec[d.fdes[i].sec]++;
	CHECK(per_sec[0] > 0 && per_sec[1] > 0); /* the start files', ours */
	t = table_of(prog);
	check_table(prog, t, &d, 3);
	djp_unwind_table_free(t);
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && objcopy --only-keep-debug prog prog.debug && objcopy --strip-debug "
		 "--remove-section=.eh_frame --remove-section=.eh_frame_hdr --add-gnu-debuglink=prog.debug "
		 "prog prog.stripped",
		 dir);
	CHECK_EQ(run(cmd), 0);
	t = table_of(stripped);
	check_table(stripped, t, &d, 2);
	djp_unwind_table_free(t);
	/* without its debug file it has none */
	snprintf(cmd, sizeof(cmd), "%s/prog.debug", dir);
	CHECK_EQ(unlink(cmd), 0);
	CHECK_EQ(djp_unwind_table_build(stripped, &t, NULL, 0), -ENODATA);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK_EQ(run(cmd), 0);
	free(d.rows);
	free(d.fdes);
}

/* An ELF program on $PATH (not a wrapper script), or NULL. */
static const char *on_path(const char *name, char *buf, size_t size)
{
	const char *p = getenv("PATH");
	while (p && *p) {
		size_t n = strcspn(p, ":");
		char magic[4] = "";
		FILE *f;
		snprintf(buf, size, "%.*s/%s", (int)n, p, name);
		if (n && (f = fopen(buf, "rb"))) {
			bool elf = fread(magic, 1, 4, f) == 4 && !memcmp(magic, "\177ELF", 4);
			fclose(f);
			if (elf)
				return buf;
		}
		p += n + (p[n] == ':');
	}
	return NULL;
}

/* Not a timed assertion: what reading libc's and python3's tables costs. */
TEST(unwind_table_build_time)
{
	char py[PATH_MAX];
	const char *paths[2] = { libc_path(), on_path("python3", py, sizeof(py)) };
	for (int i = 0; i < 2; i++) {
		struct djp_unwind_table *t;
		struct timespec a, b;
		char err[512];
		int ret;
		if (!paths[i])
			continue;
		clock_gettime(CLOCK_MONOTONIC, &a);
		ret = djp_unwind_table_build(paths[i], &t, err, sizeof(err));
		clock_gettime(CLOCK_MONOTONIC, &b);
		CHECK_EQ(ret, 0);
		fprintf(stderr, "# %s: %u FDEs, %u rows in %.1f ms\n", paths[i], t->nfdes, t->n,
			(b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6);
		djp_unwind_table_free(t);
	}
	{
		struct djp_unwind_table *t = (void *)1;
		char err[512] = "";
		CHECK_EQ(djp_unwind_table_build("/nonexistent", &t, err, sizeof(err)), -ENOEXEC);
		CHECK(t == NULL);
		CHECK(strstr(err, "/nonexistent") != NULL);
	}
}

/* ---- capturing registers ---------------------------------------------------- */

/* %rsp, %rbp and %rip at the end of the asm statement: what a probe at
 * that instruction would see. */
struct snap {
	uint64_t sp, bp, ip;
};
#define SNAP(s)                                                                                         \
	__asm__ volatile("mov %%rsp, 0(%0)\n\tmov %%rbp, 8(%0)\n\tlea 1f(%%rip), %%rax\n\tmov %%rax, 16(%0)\n1:" \
			 :                                                                              \
			 : "r"(s)                                                                       \
			 : "rax", "memory")

/* A handler's view of a snap: the other registers garbage. */
static struct djp_regs regs_of(const struct snap *s)
{
	struct djp_regs r;
	memset(&r, 0x5a, sizeof(r)); /* what a walk must not read */
	r.r[DJP_REG_RSP] = s->sp;
	r.r[DJP_REG_RBP] = s->bp;
	r.r[DJP_REG_RIP] = s->ip;
	return r;
}

/* Ready to walk: glibc's backtrace loaded (its first call dlopens libgcc),
 * the tables read, the fault-safe reads on (the runner interposes). */
static void prepare(void)
{
	void *bt[4];
	CHECK(backtrace(bt, 4) > 0);
	CHECK_EQ(djp__unwind_prepare(), 0);
	CHECK_EQ(djp_safe_copy_enable(), 0);
}

/* pcs[from..n) against backtrace's bt[from..nbt): the same list. */
static void same_as_backtrace(const uint64_t *pcs, unsigned n, void *const *bt, int nbt, unsigned from)
{
	bool ok = (int)n == nbt;
	for (unsigned i = from; ok && i < n; i++)
		ok = pcs[i] == (uint64_t)(uintptr_t)bt[i];
	if (!ok) {
		for (unsigned i = 0; i < n || (int)i < nbt; i++) {
			Dl_info info = { 0 };
			uint64_t a = i < n ? pcs[i] : 0;
			dladdr((void *)(uintptr_t)a, &info);
			fprintf(stderr, "# %2u walk %#14llx  backtrace %#14llx  %s\n", i, (unsigned long long)a,
				(int)i < nbt ? (unsigned long long)(uintptr_t)bt[i] : 0ull,
				info.dli_sname ? info.dli_sname : "?");
		}
		djp_test_fail(__FILE__, __LINE__, "walk (%u frames) and backtrace (%d) differ", n, nbt);
	}
}

/* ---- (b) a chain of frames, with and without a frame pointer --------------- */

/* What the chain's leaf saw: its walk, backtrace's, every level's
 * return address. */
static struct {
	struct snap s;
	uint64_t pcs[MAXF];
	unsigned n;
	void *bt[MAXF];
	int nbt;
	void *ra[8]; /* each level's return address, innermost first */
	unsigned max;
} ch;

static volatile int alloca_size = 40;

/* The innermost frame: walks, and asks backtrace, at the same point. */
NOIPA static int chain_leaf(int d)
{
	struct djp_regs r;
	ch.ra[0] = __builtin_return_address(0);
	SNAP(&ch.s);
	r = regs_of(&ch.s);
	ch.n = djp__unwind(&r, ch.pcs, ch.max);
	ch.nbt = backtrace(ch.bt, MAXF);
	return d + 1;
}

/* %rbp as frame pointer (CFA = %rbp + 16), by attribute. */
NOIPA __attribute__((optimize("no-omit-frame-pointer"))) static int chain_fp(int d)
{
	int r;
	ch.ra[1] = __builtin_return_address(0);
	r = chain_leaf(d + 1);
	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

/* No frame pointer: CFA = %rsp + n. */
NOIPA static int chain_plain(int d)
{
	int r;
	ch.ra[2] = __builtin_return_address(0);
	r = chain_fp(d + 1);
	__asm__ volatile("" : "+r"(r));
	return r * 3;
}

/* A frame pointer because of alloca. */
NOIPA static int chain_alloca(int d)
{
	char *p = __builtin_alloca(alloca_size);
	int r;
	ch.ra[3] = __builtin_return_address(0);
	p[0] = (char)d;
	__asm__ volatile("" : : "r"(p) : "memory");
	r = chain_plain(d + 1);
	__asm__ volatile("" : "+r"(r));
	return r + p[0];
}

/* Levels alternate, so that a walk crosses each kind of frame twice. */
NOIPA static int chain_plain2(int d)
{
	int r;
	ch.ra[4] = __builtin_return_address(0);
	r = chain_alloca(d + 1);
	__asm__ volatile("" : "+r"(r));
	return r - 1;
}

NOIPA static int chain_alloca2(int d)
{
	char *p = __builtin_alloca(alloca_size + d);
	int r;
	ch.ra[5] = __builtin_return_address(0);
	p[0] = (char)d;
	__asm__ volatile("" : : "r"(p) : "memory");
	r = chain_plain2(d + 1);
	__asm__ volatile("" : "+r"(r));
	return r + p[0];
}

NOIPA static int chain_top(int d)
{
	int r;
	ch.ra[6] = __builtin_return_address(0);
	r = chain_alloca2(d + 1);
	__asm__ volatile("" : "+r"(r));
	return r ^ 1;
}

/* The CFA rule of the row at runtime pc. */
static int cfa_rule_at(uint64_t pc)
{
	uint64_t bias;
	const struct djp_unwind_table *t = djp__unwind_table_at(pc, &bias);
	const struct djp_uw_row *row = t ? djp_unwind_table_find(t, pc - bias) : NULL;
	return row ? row->cfa : -1;
}

/* The chain's walk is the chain, then what backtrace sees beyond it. */
static void check_chain(void)
{
	ch.max = MAXF;
	chain_top(0);
	CHECK_EQ(ch.pcs[0], ch.s.ip);
	for (unsigned i = 0; i < 7; i++)
		CHECK_EQ(ch.pcs[i + 1], (uintptr_t)ch.ra[i]);
	same_as_backtrace(ch.pcs, ch.n, ch.bt, ch.nbt, 1);
	CHECK(ch.n > 10); /* the harness, main, libc's start, _start */
}

TEST(unwind_chain_matches_backtrace)
{
	prepare();
	check_chain();
	/* the chain has both kinds of frame: the rules at its calls say so */
	CHECK_EQ(cfa_rule_at((uintptr_t)ch.ra[0] - 1), DJP_UW_CFA_RBP); /* in chain_fp */
	CHECK_EQ(cfa_rule_at((uintptr_t)ch.ra[1] - 1), DJP_UW_CFA_RSP); /* in chain_plain */
	CHECK_EQ(cfa_rule_at((uintptr_t)ch.ra[2] - 1), DJP_UW_CFA_RBP); /* in chain_alloca */
	/* the same with every stack word read by process_vm_readv */
	memset(&ch, 0, sizeof(ch));
	djp__unwind_syscall_reads(true);
	check_chain();
	djp__unwind_syscall_reads(false);
	/* max is obeyed, to the frame */
	uint64_t keep[MAXF];
	memcpy(keep, ch.pcs, sizeof(keep));
	for (unsigned max = 0; max < 6; max++) {
		memset(ch.pcs, 0, sizeof(ch.pcs));
		ch.max = max;
		chain_top(0);
		CHECK_EQ(ch.n, max);
		for (unsigned i = 1; i < max; i++)
			CHECK_EQ(ch.pcs[i], keep[i]);
		CHECK_EQ(ch.pcs[max], 0);
	}
}

/* ---- (c) through a signal frame -------------------------------------------- */

/* What the SIGILL handler saw. */
static struct {
	struct snap s;
	uint64_t pcs[MAXF], uc_pcs[MAXF];
	unsigned n, uc_n;
	void *bt[MAXF];
	int nbt;
	uint64_t uc_rip, uc_rsp;
	void *ra[2];
	int hits;
} sg;

/* The interrupted registers, as a probe handler's view. */
static struct djp_regs regs_of_ucontext(const ucontext_t *uc)
{
	static const int map[DJP_REG_COUNT] = {
		[DJP_REG_RAX] = REG_RAX, [DJP_REG_RCX] = REG_RCX, [DJP_REG_RDX] = REG_RDX, [DJP_REG_RSI] = REG_RSI,
		[DJP_REG_RDI] = REG_RDI, [DJP_REG_R8] = REG_R8,	  [DJP_REG_R9] = REG_R9,   [DJP_REG_R10] = REG_R10,
		[DJP_REG_R11] = REG_R11, [DJP_REG_RBX] = REG_RBX, [DJP_REG_RBP] = REG_RBP, [DJP_REG_R12] = REG_R12,
		[DJP_REG_R13] = REG_R13, [DJP_REG_R14] = REG_R14, [DJP_REG_R15] = REG_R15, [DJP_REG_RSP] = REG_RSP,
		[DJP_REG_RIP] = REG_RIP,
	};
	struct djp_regs r;
	for (int i = 0; i < DJP_REG_COUNT; i++)
		r.r[i] = (uint64_t)uc->uc_mcontext.gregs[map[i]];
	return r;
}

/* Walks from its own registers and from the ucontext's, then resumes
 * after the ud2. */
NOIPA static void on_sigill(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	struct djp_regs r;
	(void)sig, (void)si;
	SNAP(&sg.s);
	r = regs_of(&sg.s);
	sg.n = djp__unwind(&r, sg.pcs, MAXF);
	sg.nbt = backtrace(sg.bt, MAXF);
	r = regs_of_ucontext(uc);
	sg.uc_n = djp__unwind(&r, sg.uc_pcs, MAXF);
	sg.uc_rip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	sg.uc_rsp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
	uc->uc_mcontext.gregs[REG_RIP] += 2; /* over the ud2 */
	sg.hits++;
}

/* The interrupted frame: a ud2 mid-function, an exact pc. */
NOIPA static int sig_leaf(int d)
{
	sg.ra[0] = __builtin_return_address(0);
	__asm__ volatile("ud2");
	return d + 1;
}

NOIPA static int sig_mid(int d)
{
	int r;
	sg.ra[1] = __builtin_return_address(0);
	r = sig_leaf(d + 1);
	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

static void check_signal_walk(bool altstack)
{
	static const uint8_t restorer[9] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };
	struct sigaction sa;
	stack_t ss;
	char *alt = NULL;

	memset(&sa, 0, sizeof(sa));
	memset(&sg, 0, sizeof(sg));
	sa.sa_sigaction = on_sigill;
	sa.sa_flags = SA_SIGINFO | (altstack ? SA_ONSTACK : 0);
	if (altstack) {
		CHECK((alt = malloc(1 << 16)) != NULL);
		ss = (stack_t){ .ss_sp = alt, .ss_size = 1 << 16 };
		CHECK_EQ(sigaltstack(&ss, NULL), 0);
	}
	CHECK_EQ(sigaction(SIGILL, &sa, NULL), 0);
	CHECK_EQ(sig_mid(0), 3);
	CHECK_EQ(sg.hits, 1);
	if (altstack) /* the handler ran on the other stack */
		CHECK(sg.s.sp >= (uintptr_t)alt && sg.s.sp < (uintptr_t)alt + (1 << 16));
	/* from the handler: its caller is the restorer, then the
	 * interrupted pc, the ud2 itself, then sig_leaf's callers */
	CHECK(sg.n > 4);
	CHECK(memcmp((void *)(uintptr_t)sg.pcs[1], restorer, sizeof(restorer)) == 0);
	CHECK_EQ(sg.pcs[2], sg.uc_rip);
	CHECK_EQ(*(uint16_t *)(uintptr_t)sg.uc_rip, 0x0b0f); /* ud2 */
	CHECK_EQ(sg.pcs[3], (uintptr_t)sg.ra[0]);
	CHECK_EQ(sg.pcs[4], (uintptr_t)sg.ra[1]);
	same_as_backtrace(sg.pcs, sg.n, sg.bt, sg.nbt, 1);
	/* from the ucontext: the same frames from the interrupted pc on */
	CHECK_EQ(sg.uc_n, sg.n - 2);
	for (unsigned i = 0; i < sg.uc_n; i++)
		CHECK_EQ(sg.uc_pcs[i], sg.pcs[i + 2]);
	sa.sa_handler = SIG_DFL;
	sa.sa_flags = 0;
	CHECK_EQ(sigaction(SIGILL, &sa, NULL), 0);
	if (altstack) {
		ss = (stack_t){ .ss_flags = SS_DISABLE };
		CHECK_EQ(sigaltstack(&ss, NULL), 0);
		free(alt);
	}
}

TEST(unwind_through_signal_frame)
{
	prepare();
	check_signal_walk(false);
	check_signal_walk(true);
	djp__unwind_syscall_reads(true);
	check_signal_walk(false);
	djp__unwind_syscall_reads(false);
}

/* ---- (d) garbage never crashes ------------------------------------------- */

/* xorshift64: garbage that is the same every run. */
static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* A walk that must end early: n frames at most, pcs[0] the rip. */
static unsigned walk_regs(uint64_t rip, uint64_t rsp, uint64_t rbp)
{
	struct djp_regs r;
	uint64_t pcs[MAXF];
	unsigned n;
	memset(&r, 0, sizeof(r));
	r.r[DJP_REG_RIP] = rip;
	r.r[DJP_REG_RSP] = rsp;
	r.r[DJP_REG_RBP] = rbp;
	n = djp__unwind(&r, pcs, MAXF);
	CHECK(n >= 1 && n <= MAXF);
	CHECK_EQ(pcs[0], rip);
	return n;
}

/* Walks from registers that point anywhere: each ends, none crashes. */
static void garbage_walks(unsigned iters)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), words = 8192;
	uint64_t *stack = malloc(words * 8), text_lo, text_hi, bias;
	uint8_t *none = mmap(NULL, 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	const struct djp_unwind_table *t = djp__unwind_table_at((uintptr_t)qsort, &bias);
	struct snap s;
	unsigned long long frames = 0;

	CHECK(stack != NULL && none != MAP_FAILED && t != NULL);
	text_lo = t->base + bias;
	text_hi = text_lo + t->start[t->n - 1];
	SNAP(&s);
	/* no object there, nothing to read */
	CHECK_EQ(walk_regs(0x1234, s.sp, s.bp), 1);
	CHECK_EQ(walk_regs(0, s.sp, s.bp), 1);
	/* a real pc with the stack unmapped, null, or at the top of memory */
	CHECK_EQ(walk_regs(s.ip, (uintptr_t)none + page - 8, s.bp), 1);
	CHECK_EQ(walk_regs(s.ip, 16, s.bp), 1);
	CHECK_EQ(walk_regs(s.ip, UINT64_MAX - 4, s.bp), 1);
	/* a frame-pointer frame whose %rbp is unmapped */
	CHECK(cfa_rule_at((uintptr_t)ch.ra[0] - 1) == DJP_UW_CFA_RBP);
	CHECK_EQ(walk_regs((uintptr_t)ch.ra[0] - 1, s.sp, (uintptr_t)none), 1);
	/* a stack of pointers into libc's code, into the stack, and noise */
	for (unsigned it = 0; it < iters; it++) {
		uint64_t rip, rsp, rbp;
		if (it % 64 == 0)
			for (size_t i = 0; i < words; i++) {
				uint64_t k = rnd() % 4;
				stack[i] = k == 0 ? text_lo + rnd() % (text_hi - text_lo)
					 : k == 1 ? (uintptr_t)&stack[rnd() % words]
					 : k == 2 ? rnd() % 4096
						  : rnd();
			}
		rip = rnd() % 8 ? text_lo + rnd() % (text_hi - text_lo) : rnd();
		rsp = rnd() % 8 ? (uintptr_t)&stack[rnd() % words] + rnd() % 8 : rnd();
		rbp = rnd() % 2 ? (uintptr_t)&stack[rnd() % words] : rnd() % 4 ? rnd() : (uintptr_t)none;
		frames += walk_regs(rip, rsp, rbp);
	}
	fprintf(stderr, "# %u garbage walks: %.2f frames each on average\n", iters, (double)frames / iters);
	munmap(none, 2 * page);
	free(stack);
}

TEST(unwind_garbage_registers_never_crash)
{
	prepare();
	ch.max = MAXF;
	chain_top(0); /* ch.ra: a frame-pointer function */
	garbage_walks(200000);
	djp__unwind_syscall_reads(true);
	garbage_walks(5000);
	djp__unwind_syscall_reads(false);
}

TEST(unwind_before_prepare_stops_at_first_frame)
{
	struct snap s;
	SNAP(&s);
	/* no tables yet: the hit's pc, nothing more, no crash */
	CHECK_EQ(walk_regs(s.ip, s.sp, s.bp), 1);
}

/* ---- tables follow the objects ------------------------------------------ */

TEST(unwind_tables_follow_dlopen_and_dlclose)
{
	const char *lib = djp_test_path("libdjp_dltest.so");
	uint64_t bias = 0, pcs[MAXF], stk[4] = { 0x1234, 0, 0, 0 };
	struct djp_regs r;
	void *h, *fn;
	Dl_info info;

	if (access(lib, R_OK))
		djp_test_fail(__FILE__, __LINE__, "%s: %s (make builds it)", lib, strerror(errno));
	prepare();
	CHECK((h = dlopen(lib, RTLD_NOW)) != NULL);
	CHECK((fn = dlsym(h, "dltest_run")) != NULL);
	CHECK(dladdr(fn, &info));
	/* read when it was loaded, at its load bias */
	CHECK(djp__unwind_table_at((uintptr_t)fn, &bias) != NULL);
	CHECK_EQ(bias, (uintptr_t)info.dli_fbase);
	/* at its entry the return address is the word at %rsp (one in no
	 * object here, which ends the walk after it) */
	memset(&r, 0, sizeof(r));
	r.r[DJP_REG_RIP] = (uintptr_t)fn;
	r.r[DJP_REG_RSP] = (uintptr_t)stk;
	CHECK_EQ(djp__unwind(&r, pcs, MAXF), 2);
	CHECK_EQ(pcs[1], stk[0]);
	CHECK_EQ(dlclose(h), 0);
	/* gone with it: the walk stops at the pc */
	CHECK(djp__unwind_table_at((uintptr_t)fn, NULL) == NULL);
	CHECK_EQ(djp__unwind(&r, pcs, MAXF), 1);
}

/* ---- (e) through libc's frames: qsort ------------------------------------ */

/* What the comparator saw, the first time qsort called it. */
static struct {
	struct snap s;
	uint64_t pcs[MAXF];
	unsigned n;
	void *bt[MAXF];
	int nbt;
	void *caller_ra;
	bool done;
} qs;

/* Called from libc's sort: walks from there once. */
NOIPA static int cmp_ints(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	if (!qs.done) {
		struct djp_regs r;
		qs.done = true;
		SNAP(&qs.s);
		r = regs_of(&qs.s);
		qs.n = djp__unwind(&r, qs.pcs, MAXF);
		qs.nbt = backtrace(qs.bt, MAXF);
	}
	return (x > y) - (x < y);
}

/* The frame above libc's. */
NOIPA static void sort_some(void)
{
	int v[64];
	qs.caller_ra = __builtin_return_address(0);
	for (int i = 0; i < 64; i++)
		v[i] = (int)(rnd() % 1000);
	qsort(v, 64, sizeof(v[0]), cmp_ints);
	for (int i = 1; i < 64; i++)
		CHECK(v[i - 1] <= v[i]);
}

TEST(unwind_through_qsort)
{
	Dl_info libc, info;
	unsigned in_libc = 0, named = 0, caller = 0;

	prepare();
	sort_some();
	CHECK(qs.done);
	same_as_backtrace(qs.pcs, qs.n, qs.bt, qs.nbt, 1);
	CHECK(dladdr((void *)qsort, &libc));
	for (unsigned i = 1; i < qs.n; i++) {
		CHECK(dladdr((void *)(uintptr_t)qs.pcs[i], &info));
		if (info.dli_fbase == libc.dli_fbase && !caller) {
			in_libc++;
			named += info.dli_sname &&
				 (!strcmp(info.dli_sname, "qsort_r") || !strcmp(info.dli_sname, "qsort"));
		}
		/* sort_some's call of qsort: the frame after libc's */
		if (i >= 2 && !caller && info.dli_fbase != libc.dli_fbase)
			caller = i;
	}
	fprintf(stderr, "# comparator -> %u libc frames (%u named qsort) -> sort_some\n", in_libc, named);
	CHECK(in_libc >= 2); /* qsort_r and its merge sort */
	CHECK(named >= 1);
	CHECK(caller >= 3);
	CHECK_EQ(qs.pcs[caller + 1], (uintptr_t)qs.caller_ra);
}

/* ---- (f) what a walk costs ------------------------------------------------ */

/* ns per walk, fault-safe copy and process_vm_readv. */
static struct {
	double ns[2];
	unsigned n;
} tm;

/* The same 10-frame walk, many times, each way of reading. */
NOIPA static int time_leaf(int d)
{
	struct snap s;
	struct djp_regs r;
	uint64_t pcs[10];
	SNAP(&s);
	r = regs_of(&s);
	for (int mode = 0; mode < 2; mode++) {
		unsigned reps = mode ? 2000 : 200000;
		struct timespec a, b;
		djp__unwind_syscall_reads(mode);
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (unsigned i = 0; i < reps; i++)
			tm.n = djp__unwind(&r, pcs, 10);
		clock_gettime(CLOCK_MONOTONIC, &b);
		tm.ns[mode] = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / reps;
	}
	djp__unwind_syscall_reads(false);
	return d + 1;
}

/* Frames for the timed walk to cross. */
NOIPA static int time_mid(int d)
{
	int r = d > 0 ? time_mid(d - 1) : time_leaf(d);
	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

TEST(unwind_walk_cost)
{
	prepare();
	time_mid(6);
	CHECK_EQ(tm.n, 10);
	fprintf(stderr, "# a walk of 10 frames: %.0f ns (fault-safe copy), %.0f ns (process_vm_readv)\n", tm.ns[0],
		tm.ns[1]);
}

/* ---- from a probe handler --------------------------------------------------- */

/*
 * What a handler has: the hit's register view.  An int3 probe's view holds
 * every register (built from the ucontext), an instruction probe's every
 * one but %rip, which is the site; a jump-armed marker's holds %rsp and
 * %rbp when the marker's arguments read them, or when the handler is
 * connected with DJP__STACK (kernel/unwind.h says more).
 */
static struct {
	uint64_t pcs[MAXF];
	unsigned n;
	uintptr_t site;
	void *bt[MAXF];
	int nbt;
	void *ra;
	int hits;
} mk;

/* The handler: the view, with %rip the site (which the view need not
 * hold), walked.  General registers only: it runs from the lean
 * trampoline too. */
__attribute__((target("general-regs-only"))) static void on_hit(const struct djp_hit *hit, void *data)
{
	struct djp_regs r = hit->regs;
	(void)data;
	mk.site = djp_hit_site(hit);
	r.r[DJP_REG_RIP] = mk.site;
	mk.n = djp__unwind(&r, mk.pcs, MAXF);
	mk.hits++;
}

/* A marker, probed as int3. */
NOIPA static int marked(int d)
{
	mk.ra = __builtin_return_address(0);
	MARK(unwind_marked, "d=%d", d);
	mk.nbt = backtrace(mk.bt, MAXF);
	return d + 1;
}

/* An instruction probe's target: its entry is probed. */
__attribute__((noinline, used)) int unwind_point_target(int d)
{
	mk.ra = __builtin_return_address(0);
	mk.nbt = backtrace(mk.bt, MAXF);
	__asm__ volatile("" ::: "memory");
	return d + 1;
}

/* The frame above the probed one. */
NOIPA static int probed_caller(int d, bool point)
{
	int r = point ? unwind_point_target(d + 1) : marked(d + 1);
	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

/* One hit: the walk from the hit is backtrace's from the same function. */
static void check_probe(int id, bool point)
{
	CHECK(id >= 0);
	memset(&mk, 0, sizeof(mk));
	CHECK_EQ(probed_caller(0, point), 3);
	CHECK_EQ(mk.hits, 1);
	CHECK_EQ(mk.pcs[0], mk.site);
	CHECK_EQ(mk.pcs[1], (uintptr_t)mk.ra);
	same_as_backtrace(mk.pcs, mk.n, mk.bt, mk.nbt, 1);
	CHECK_EQ(djp_disconnect(id), 0);
}

TEST(unwind_from_probe_handler)
{
	static const unsigned modes[] = { 0, DJP_GPR_ONLY, DJP_FORCE_INT3 };
	prepare();
	check_probe(djp_connect("unwind_marked", on_hit, NULL, DJP_FORCE_INT3), false);
	for (unsigned m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		struct djp_point_opts o = { .sz = sizeof(o), .func = "unwind_point_target" };
		check_probe(djp_connect_at(&o, on_hit, NULL, modes[m]), true);
	}
}

/* A hit's jump target at `site`, or 0 when it holds no jump. */
static uintptr_t jump_target(uintptr_t site)
{
	int32_t rel;
	if (*(volatile uint8_t *)site != 0xe9)
		return 0;
	memcpy(&rel, (const void *)(site + 1), 4);
	return site + 5 + (intptr_t)rel;
}

static atomic_int plain_hits;

__attribute__((target("general-regs-only"))) static void on_hit_plain(const struct djp_hit *hit, void *data)
{
	(void)hit;
	(void)data;
	atomic_fetch_add(&plain_hits, 1);
}

/*
 * A jump-armed marker whose arguments read neither %rsp nor %rbp: its
 * lean trampoline saves them for a handler connected with DJP__STACK, so
 * the walk is backtrace's, as at int3 (without them the walk starts from
 * whatever the view's slots held).  A site armed for a handler that did not
 * ask moves to the trampoline that saves them when one that does joins,
 * and back to the first (kept) when it leaves.
 */
TEST(unwind_from_jump_armed_marker)
{
	struct djp_connect_opts st = { .stack = true };
	uintptr_t plain_tramp, stack_tramp;
	int plain;

	prepare();
	/* alone */
	memset(&mk, 0, sizeof(mk));
	CHECK_EQ(probed_caller(0, false), 3); /* the site's address, for what follows */
	plain = djp__connect("unwind_marked", on_hit, NULL, DJP_GPR_ONLY, &st);
	CHECK(plain >= 0);
	CHECK_EQ(probed_caller(0, false), 3);
	CHECK_EQ(mk.hits, 1);
	CHECK(jump_target(mk.site) != 0);
	check_probe(plain, false);
	/* with a handler that does not walk, first alone, then joined */
	CHECK((plain = djp_connect("unwind_marked", on_hit_plain, NULL, DJP_GPR_ONLY)) >= 0);
	CHECK((plain_tramp = jump_target(mk.site)) != 0);
	{
		int id = djp__connect("unwind_marked", on_hit, NULL, DJP_GPR_ONLY, &st);
		CHECK(id >= 0);
		CHECK((stack_tramp = jump_target(mk.site)) != 0);
		CHECK(stack_tramp != plain_tramp);
		check_probe(id, false);
	}
	CHECK_EQ(jump_target(mk.site), plain_tramp);
	CHECK_EQ(atomic_load(&plain_hits), 1);
	CHECK_EQ(djp_disconnect(plain), 0);
}

static void on_return(const struct djp_hit *hit, void *data)
{
	(void)hit;
	(void)data;
}

/*
 * Inside a call whose return a return probe diverted, the caller's
 * return address on the stack is the return trampoline's: the walk takes
 * the real one from the thread's pending returns and goes on as
 * backtrace() does (the engine gives libgcc's unwinder the real addresses
 * back, kernel/retprobes.c).
 */
TEST(unwind_through_a_diverted_return)
{
	struct djp_point_opts o = { .sz = sizeof(o), .func = "marked", .retprobe = true };
	int ret, id;

	prepare();
	CHECK((ret = djp_connect_at(&o, on_return, NULL, DJP_GPR_ONLY)) >= 0);
	CHECK((id = djp_connect("unwind_marked", on_hit, NULL, DJP_FORCE_INT3)) >= 0);
	memset(&mk, 0, sizeof(mk));
	CHECK_EQ(probed_caller(0, false), 3);
	CHECK_EQ(mk.hits, 1);
	CHECK_EQ(mk.ra, djp_ret_tramp); /* diverted when the marker was hit */
	CHECK(mk.pcs[1] != (uintptr_t)djp_ret_tramp);
	same_as_backtrace(mk.pcs, mk.n, mk.bt, mk.nbt, 1);
	CHECK_EQ(djp_disconnect(id), 0);
	CHECK_EQ(djp_disconnect(ret), 0);
}

/* ---- walks while objects come and go --------------------------------------- */

static struct {
	atomic_uint walks, short_walks;
	atomic_bool stop;
	unsigned depth; /* the first walk's */
} mt;

/* A handler that walks on every hit and notes walks that came up short. */
__attribute__((target("general-regs-only"))) static void on_hit_count(const struct djp_hit *hit, void *data)
{
	struct djp_regs r = hit->regs;
	uint64_t pcs[MAXF];
	unsigned n;
	(void)data;
	r.r[DJP_REG_RIP] = djp_hit_site(hit);
	n = djp__unwind(&r, pcs, MAXF);
	if (!mt.depth)
		mt.depth = n;
	if (n != mt.depth)
		atomic_fetch_add(&mt.short_walks, 1);
	atomic_fetch_add(&mt.walks, 1);
}

/* Hits the marker until told to stop. */
static void *hitter(void *arg)
{
	(void)arg;
	while (!atomic_load(&mt.stop))
		probed_caller(0, false);
	return NULL;
}

TEST_TIMEOUT(unwind_walks_while_objects_come_and_go, 120)
{
	const char *lib = djp_test_path("libdjp_dltest.so");
	pthread_t th;
	int id;

	if (access(lib, R_OK))
		djp_test_fail(__FILE__, __LINE__, "%s: %s (make builds it)", lib, strerror(errno));
	prepare();
	CHECK((id = djp_connect("unwind_marked", on_hit_count, NULL, DJP_FORCE_INT3)) >= 0);
	CHECK_EQ(pthread_create(&th, NULL, hitter, NULL), 0);
	while (atomic_load(&mt.walks) < 10)
		usleep(1000);
	/* each dlopen reads a table and publishes a registry, each dlclose
	 * retires one after a grace period, while the other thread walks */
	for (int i = 0; i < 40; i++) {
		void *h = dlopen(lib, RTLD_NOW);
		CHECK(h != NULL);
		CHECK(djp__unwind_table_at((uintptr_t)dlsym(h, "dltest_run"), NULL) != NULL);
		CHECK_EQ(dlclose(h), 0);
	}
	atomic_store(&mt.stop, true);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(djp_disconnect(id), 0);
	fprintf(stderr, "# %u walks of %u frames during 40 dlopen/dlclose\n", atomic_load(&mt.walks), mt.depth);
	/* marked, its caller, the thread's function, start_thread, clone3:
	 * what backtrace saw from marked, on that thread */
	CHECK_EQ(mt.depth, mk.nbt);
	CHECK_EQ(atomic_load(&mt.short_walks), 0);
}
