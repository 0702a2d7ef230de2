/* The function table and line resolver (lib/func_symbols.c) on the target
 * program selftests/progs/func_targets.c at -O2 and -O0, on libc and on this
 * runner itself.  Expected values come from elsewhere: nm and readelf on
 * the same file, the runner's own addresses and bytes in memory, the tags
 * in the target's source. */
#include <dlfcn.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <link.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "harness.h"
#include "lib/func_symbols.h"

#define PROG "progs/func_targets"
#define PROG_O0 "progs/func_targets-O0"
#define SOURCE "../../selftests/progs/func_targets.c"

/* What nm -S --defined-only says of a file. */
struct nm_sym {
	uint64_t addr, size;
	char type;
	char name[256];
};

struct nm_list {
	struct nm_sym *v;
	size_t n;
};

static void run_to_list(const char *cmd, struct nm_list *l, bool readelf)
{
	char line[1024];
	size_t cap = 0;
	FILE *p = popen(cmd, "r");

	CHECK(p != NULL);
	l->v = NULL;
	l->n = 0;
	while (fgets(line, sizeof(line), p)) {
		struct nm_sym s = { 0 };
		unsigned long long a, z;
		char t[32], f1[64], f2[64], f3[64], name[256];
		if (readelf) {
			/* "  12: 0000000000001149    41 FUNC    GLOBAL DEFAULT   16 name" */
			char size[32];
			if (sscanf(line, " %*[0-9]: %llx %31s %31s %63s %63s %63s %255s", &a, size, t, f1, f2, f3,
				   name) != 7)
				continue;
			if (strcmp(t, "FUNC") && strcmp(t, "IFUNC"))
				continue;
			if (!strcmp(f3, "UND") || !a)
				continue;
			s.addr = a;
			s.size = strtoull(size, NULL, 0);
			s.type = strcmp(f1, "LOCAL") ? 'G' : 'L';
		} else {
			int k = sscanf(line, "%llx %llx %31s %255s", &a, &z, t, name);
			if (k == 4) {
				s.addr = a;
				s.size = z;
			} else if (sscanf(line, "%llx %31s %255s", &a, t, name) == 3) {
				s.addr = a;
			} else {
				continue;
			}
			s.type = t[0];
		}
		char *at = strchr(name, '@'); /* versions: the table has bare names */
		if (at && at != name)
			*at = 0;
		snprintf(s.name, sizeof(s.name), "%s", name);
		if (l->n == cap) {
			cap = cap ? 2 * cap : 256;
			l->v = realloc(l->v, cap * sizeof(*l->v));
			CHECK(l->v != NULL);
		}
		l->v[l->n++] = s;
	}
	CHECK(pclose(p) == 0);
	CHECK(l->n > 0);
}

static void nm_list(const char *path, bool dynamic, struct nm_list *l)
{
	char cmd[PATH_MAX + 64];
	snprintf(cmd, sizeof(cmd), "nm -S --defined-only %s '%s'", dynamic ? "-D" : "", path);
	run_to_list(cmd, l, false);
}

/* The FUNC and IFUNC symbols of both tables, by readelf. */
static void readelf_funcs(const char *path, struct nm_list *l)
{
	char cmd[PATH_MAX + 64];
	snprintf(cmd, sizeof(cmd), "readelf -sW --dyn-syms '%s'", path);
	run_to_list(cmd, l, true);
}

static const struct nm_sym *nm_find(const struct nm_list *l, const char *name, uint64_t addr)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].addr == addr && !strcmp(l->v[i].name, name))
			return &l->v[i];
	return NULL;
}

static const struct nm_sym *nm_by_name(const struct nm_list *l, const char *name)
{
	const struct nm_sym *found = NULL;
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].name, name) && strchr("TtWwi", l->v[i].type)) {
			CHECK(found == NULL);
			found = &l->v[i];
		}
	return found;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static size_t distinct_addrs(const struct nm_list *l)
{
	uint64_t *v = malloc((l->n + 1) * sizeof(*v));
	size_t n = 0;
	CHECK(v != NULL);
	for (size_t i = 0; i < l->n; i++)
		v[i] = l->v[i].addr;
	qsort(v, l->n, sizeof(*v), cmp_u64);
	for (size_t i = 0; i < l->n; i++)
		n += !i || v[i] != v[i - 1];
	free(v);
	return n;
}

static struct djp_func_table *read_ok(const char *path)
{
	struct djp_func_table *t = NULL;
	char err[512] = "";
	int ret = djp_funcs_read(path, &t, err, sizeof(err));
	if (ret)
		fprintf(stderr, "# %s\n", err);
	CHECK_EQ(ret, 0);
	CHECK(t != NULL);
	return t;
}

static int first_match(void *ctx, const struct djp_func *f)
{
	*(const struct djp_func **)ctx = f;
	return 0;
}

/* The one entry named `name`, or NULL. */
static const struct djp_func *by_name(const struct djp_func_table *t, const char *name)
{
	const struct djp_func *f = NULL;
	int n = djp_funcs_match(t, name, first_match, &f);
	CHECK(n <= 1);
	return n ? f : NULL;
}

/* The functions func_targets.c defines out of line at every level. */
static const char *const targets[] = { "func_target_add", "func_target_loop", "func_target_local",
				       "func_target_caller1", "func_target_caller2" };
#define NTARGETS (sizeof(targets) / sizeof(targets[0]))

/* Every entry of the table is a function nm lists at that address with that
 * size; every function of the target program is in the table; the table
 * has one entry per distinct address of readelf's FUNC symbols. */
static void check_against_nm(const char *rel)
{
	char path[PATH_MAX];
	struct nm_list nm, re;
	struct djp_func_table *t;

	snprintf(path, sizeof(path), "%s", djp_test_path(rel));
	t = read_ok(path);
	nm_list(path, false, &nm);
	readelf_funcs(path, &re);
	CHECK(t->is_dyn); /* a PIE */
	CHECK_EQ(t->count, distinct_addrs(&re));
	for (size_t i = 0; i < t->count; i++) {
		const struct djp_func *f = &t->v[i];
		const struct nm_sym *s = nm_find(&nm, f->name, f->addr);
		if (!s)
			fprintf(stderr, "# %s at 0x%llx: not in nm's list\n", f->name, (unsigned long long)f->addr);
		CHECK(s != NULL);
		CHECK_EQ(f->size, s->size);
		CHECK(strchr("TtWwi", s->type));
		CHECK_EQ(f->global, s->type != 't');
		if (i)
			CHECK(f->addr > t->v[i - 1].addr);
	}
	for (size_t i = 0; i < NTARGETS; i++) {
		const struct nm_sym *s = nm_by_name(&nm, targets[i]);
		const struct djp_func *f = by_name(t, targets[i]);
		CHECK(s != NULL);
		CHECK(f != NULL);
		CHECK_EQ(f->addr, s->addr);
		CHECK_EQ(f->size, s->size);
		CHECK(f->size > 0);
		CHECK_EQ(f->global, s->type == 'T');
	}
	const struct djp_func *local = by_name(t, "func_target_local");
	CHECK(!local->global);
	CHECK(by_name(t, "func_target_add")->global);
	free(nm.v);
	free(re.v);
	djp_funcs_free(t);
}

TEST(func_symbols_agree_with_nm)
{
	check_against_nm(PROG);
}

TEST(func_symbols_agree_with_nm_O0)
{
	check_against_nm(PROG_O0);
}

static void check_at_and_glob(const char *rel)
{
	char path[PATH_MAX];
	struct nm_list nm;
	struct djp_func_table *t;
	size_t want = 0;

	snprintf(path, sizeof(path), "%s", djp_test_path(rel));
	t = read_ok(path);
	nm_list(path, false, &nm);
	for (size_t i = 0; i < nm.n; i++) {
		const struct nm_sym *s = &nm.v[i];
		if (!strchr("TtWwi", s->type) || fnmatch("func_target_*", s->name, 0))
			continue;
		want++;
		const struct djp_func *f = djp_funcs_at(t, s->addr + s->size / 2);
		CHECK(f != NULL);
		CHECK_STR(f->name, s->name);
		CHECK(djp_funcs_at(t, s->addr) == f);
		CHECK(djp_funcs_at(t, s->addr + s->size - 1) == f);
		const struct djp_func *after = djp_funcs_at(t, s->addr + s->size);
		CHECK(after != f);
	}
	CHECK(want >= NTARGETS);
	CHECK_EQ(djp_funcs_match(t, "func_target_*", NULL, NULL), want);
	CHECK_EQ(djp_funcs_match(t, "func_target_add", NULL, NULL), 1);
	CHECK_EQ(djp_funcs_match(t, "func_target_ad", NULL, NULL), 0);
	CHECK_EQ(djp_funcs_match(t, "func_target_sink", NULL, NULL), 0); /* a variable */
	CHECK_EQ(djp_funcs_at(t, 0), NULL);
	free(nm.v);
	djp_funcs_free(t);
}

TEST(func_symbols_at_and_glob)
{
	check_at_and_glob(PROG);
}

TEST(func_symbols_at_and_glob_O0)
{
	check_at_and_glob(PROG_O0);
}

static int stop_at(void *ctx, const struct djp_func *f)
{
	int *calls = ctx;
	(*calls)++;
	return *calls == 2 ? calls[1] : 0;
}

TEST(func_symbols_match_callback_stops)
{
	struct djp_func_table *t = read_ok(djp_test_path(PROG));
	int all = djp_funcs_match(t, "func_target_*", NULL, NULL);
	int ctx[2] = { 0, 1 };
	CHECK(all >= 3);
	CHECK_EQ(djp_funcs_match(t, "func_target_*", stop_at, ctx), 2);
	CHECK_EQ(ctx[0], 2);
	ctx[0] = 0;
	ctx[1] = -ECANCELED;
	CHECK_EQ(djp_funcs_match(t, "func_target_*", stop_at, ctx), -ECANCELED);
	CHECK_EQ(ctx[0], 2);
	ctx[0] = 0;
	ctx[1] = 0;
	CHECK_EQ(djp_funcs_match(t, "func_target_*", stop_at, ctx), all);
	CHECK_EQ(ctx[0], all);
	djp_funcs_free(t);
}

struct object {
	const char *want;
	char path[PATH_MAX];
	uintptr_t bias;
	bool found;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct object *o = data;
	const char *name = info->dlpi_name;
	if (o->found || !name || !(o->want ? strstr(name, o->want) != NULL : !*name))
		return 0;
	snprintf(o->path, sizeof(o->path), "%s", *name ? name : "/proc/self/exe");
	o->bias = info->dlpi_addr;
	o->found = true;
	return 1;
}

/* The runner's own functions: djp_funcs_at on the link-time address of a
 * function the runner calls gives its name, and the file's bytes at the
 * offset djp_funcs_file_offset gives are the bytes in memory. */
TEST(func_symbols_find_own_functions)
{
	struct object self = { .want = NULL };
	struct djp_func_table *t;
	uint64_t off;
	unsigned char file[16];
	const struct {
		const char *name;
		const void *addr;
	} fns[] = {
		{ "djp_funcs_read", (const void *)djp_funcs_read },
		{ "djp_lines_resolve", (const void *)djp_lines_resolve },
		{ "check_against_nm", (const void *)check_against_nm },
	};

	dl_iterate_phdr(find_object, &self);
	CHECK(self.found);
	t = read_ok(self.path);
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		uint64_t link = (uintptr_t)fns[i].addr - self.bias;
		const struct djp_func *f = djp_funcs_at(t, link + 1);
		CHECK(f != NULL);
		CHECK_STR(f->name, fns[i].name);
		CHECK_EQ(f->addr, link);
		CHECK(f->size >= sizeof(file));
		CHECK_EQ(djp_funcs_file_offset(t, f->addr, &off), 0);
		FILE *fp = fopen(self.path, "rb");
		CHECK(fp != NULL);
		CHECK(fseek(fp, (long)off, SEEK_SET) == 0);
		CHECK_EQ(fread(file, 1, sizeof(file), fp), sizeof(file));
		fclose(fp);
		CHECK(memcmp(file, fns[i].addr, sizeof(file)) == 0);
	}
	CHECK_EQ(by_name(t, "check_against_nm")->global, false);
	CHECK_EQ(djp_funcs_file_offset(t, UINT64_MAX - 1, &off), -ENOENT);
	djp_funcs_free(t);
}

/* libc, stripped by the distribution: malloc from .dynsym, at the address
 * the dynamic linker gives it, under its own name rather than an alias. */
TEST(func_symbols_libc_malloc)
{
	struct object libc = { .want = "/libc.so" };
	struct nm_list dyn;
	void *h, *addr;

	dl_iterate_phdr(find_object, &libc);
	CHECK(libc.found);
	CHECK((h = dlopen(libc.path, RTLD_LAZY | RTLD_NOLOAD)) != NULL);
	CHECK((addr = dlsym(h, "malloc")) != NULL);
	dlclose(h);
	struct djp_func_table *t = read_ok(libc.path);
	CHECK(t->is_dyn);
	const struct djp_func *f = by_name(t, "malloc");
	CHECK(f != NULL);
	CHECK_EQ(f->addr, (uintptr_t)addr - libc.bias);
	CHECK(f->global);
	CHECK(djp_funcs_at(t, f->addr + f->size / 2) == f);
	nm_list(libc.path, true, &dyn);
	const struct nm_sym *s = nm_find(&dyn, "malloc", f->addr);
	CHECK(s != NULL);
	CHECK_EQ(f->size, s->size);
	free(dyn.v);
	djp_funcs_free(t);
}

/* The line of func_targets.c that carries "tag: NAME". */
static int tagged_line(const char *tag)
{
	char want[64], line[512];
	int n = 0, found = 0;
	FILE *f = fopen(djp_test_path(SOURCE), "r");

	CHECK(f != NULL);
	snprintf(want, sizeof(want), "tag: %s ", tag);
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, want)) {
			CHECK(!found);
			found = n;
		}
	}
	fclose(f);
	CHECK(found > 0);
	return found;
}

static int resolve(const char *path, const char *file, int line, uint64_t *addrs, size_t max, char *err,
		   size_t errsz)
{
	char spec[PATH_MAX + 32];
	snprintf(spec, sizeof(spec), "%s:%d", file, line);
	return djp_lines_resolve(path, spec, addrs, max, err, errsz);
}

/* The nm function (T or t) whose range holds addr. */
static const char *nm_function_at(const struct nm_list *l, uint64_t addr)
{
	for (size_t i = 0; i < l->n; i++)
		if (strchr("Tt", l->v[i].type) && addr >= l->v[i].addr && addr - l->v[i].addr < l->v[i].size)
			return l->v[i].name;
	return NULL;
}

static void check_lines(const char *rel)
{
	char path[PATH_MAX], src[PATH_MAX], err[512];
	uint64_t a[64], b[64];
	struct nm_list nm;
	int n, m;

	snprintf(path, sizeof(path), "%s", djp_test_path(rel));
	CHECK(realpath(djp_test_path(SOURCE), src) != NULL);
	nm_list(path, false, &nm);

	const struct {
		const char *tag, *fn;
	} lines[] = { { "add-body", "func_target_add" }, { "local-body", "func_target_local" } };
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		int line = tagged_line(lines[i].tag);
		n = resolve(path, "func_targets.c", line, a, 64, err, sizeof(err));
		if (n < 0)
			fprintf(stderr, "# %s\n", err);
		CHECK(n > 0);
		for (int k = 0; k < n; k++) {
			CHECK_STR(nm_function_at(&nm, a[k]), lines[i].fn);
			if (k)
				CHECK(a[k] > a[k - 1]);
		}
		/* the same for a longer suffix and for the whole path */
		const char *same[] = { "progs/func_targets.c", "selftests/progs/func_targets.c",
				       "./selftests/progs//func_targets.c", src };
		for (size_t j = 0; j < sizeof(same) / sizeof(same[0]); j++) {
			m = resolve(path, same[j], line, b, 64, err, sizeof(err));
			if (m < 0)
				fprintf(stderr, "# %s\n", err);
			CHECK_EQ(m, n);
			CHECK(memcmp(a, b, (size_t)n * sizeof(*a)) == 0);
		}
		/* not a path suffix component by component */
		const char *other[] = { "argets.c", "s/func_targets.c", "/progs/func_targets.c", "func_targets.h" };
		for (size_t j = 0; j < sizeof(other) / sizeof(other[0]); j++)
			CHECK_EQ(resolve(path, other[j], line, b, 64, err, sizeof(err)), -ENOENT);
		/* max limits what is written */
		b[0] = 0;
		CHECK_EQ(resolve(path, "func_targets.c", line, b, 1, err, sizeof(err)), 1);
		CHECK_EQ(b[0], a[0]);
	}

	/* inlined into both callers: an address in each */
	n = resolve(path, "func_targets.c", tagged_line("inlined-body"), a, 64, err, sizeof(err));
	CHECK(n >= 2);
	bool in1 = false, in2 = false;
	for (int k = 0; k < n; k++) {
		const char *fn = nm_function_at(&nm, a[k]);
		CHECK(fn != NULL);
		in1 |= !strcmp(fn, "func_target_caller1");
		in2 |= !strcmp(fn, "func_target_caller2");
		CHECK(!strcmp(fn, "func_target_caller1") || !strcmp(fn, "func_target_caller2"));
	}
	CHECK(in1 && in2);
	free(nm.v);
}

TEST(func_lines_resolve_to_their_function)
{
	check_lines(PROG);
}

TEST(func_lines_resolve_to_their_function_O0)
{
	check_lines(PROG_O0);
}

/* A comment line and the blank line after it have no code: -ENOENT, never
 * the next line that has some. */
TEST(func_lines_without_code_are_enoent)
{
	const char *progs[] = { PROG, PROG_O0 };
	char err[512], want[64];
	uint64_t a[8];
	int line = tagged_line("comment-line");

	for (size_t i = 0; i < 2; i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s", djp_test_path(progs[i]));
		for (int l = line; l <= line + 1; l++) {
			CHECK_EQ(resolve(path, "func_targets.c", l, a, 8, err, sizeof(err)), -ENOENT);
			snprintf(want, sizeof(want), "func_targets.c:%d: ", l);
			CHECK(!strncmp(err, want, strlen(want)));
			CHECK(strchr(err, '\n') == NULL);
		}
		/* far past the end of the file */
		CHECK_EQ(resolve(path, "func_targets.c", 100000, a, 8, err, sizeof(err)), -ENOENT);
		/* a file that is not in the program at all */
		CHECK_EQ(resolve(path, "no_such_file.c", line, a, 8, err, sizeof(err)), -ENOENT);
		CHECK(!strncmp(err, path, strlen(path)));
	}
}

TEST(func_lines_stripped_copy_is_enodata)
{
	char tmp[] = "/tmp/djp-func-stripped-XXXXXX", cmd[PATH_MAX * 2], err[512];
	uint64_t a[8];
	int fd = mkstemp(tmp), line = tagged_line("add-body");

	CHECK(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "objcopy --strip-debug '%s' '%s'", djp_test_path(PROG), tmp);
	int st = system(cmd);
	if (st != 0) {
		unlink(tmp);
		CHECK_EQ(st, 0);
	}
	int ret = resolve(tmp, "func_targets.c", line, a, 8, err, sizeof(err));
	/* the unstripped program has code there */
	int ok = resolve(djp_test_path(PROG), "func_targets.c", line, a, 8, NULL, 0);
	/* and the stripped copy keeps its symbols */
	struct djp_func_table *t = NULL;
	int tret = djp_funcs_read(tmp, &t, NULL, 0);
	unlink(tmp);
	CHECK_EQ(ret, -ENODATA);
	CHECK(!strncmp(err, tmp, strlen(tmp)) && err[strlen(tmp)] == ':');
	CHECK(strstr(err, "no debug information") != NULL);
	CHECK(ok > 0);
	CHECK_EQ(tret, 0);
	CHECK(by_name(t, "func_target_local") != NULL);
	djp_funcs_free(t);
}

/* Where a function probe goes: at -O0, after the frame is set up, at the
 * first statement of the body; at -O2 (GCC marks no prologue end), at the
 * entry itself. */
TEST(func_after_prologue)
{
	char path[PATH_MAX];
	uint64_t a[16], off;
	unsigned char code[8];
	int line = tagged_line("add-body"), n;

	snprintf(path, sizeof(path), "%s", djp_test_path(PROG_O0));
	struct djp_func_table *t = read_ok(path);
	const struct djp_func *f = by_name(t, "func_target_add");
	CHECK(f != NULL);
	uint64_t pc = djp_func_after_prologue(path, f);
	n = resolve(path, "func_targets.c", line, a, 16, NULL, 0);
	CHECK(n > 0);
	CHECK_EQ(pc, a[0]);
	CHECK(pc > f->addr && pc < f->addr + f->size);
	/* -O0 code opens with push %rbp; mov %rsp,%rbp (after an endbr64 with
	 * -fcf-protection): the probe is past them */
	CHECK_EQ(djp_funcs_file_offset(t, f->addr, &off), 0);
	FILE *fp = fopen(path, "rb");
	CHECK(fp != NULL);
	CHECK(fseek(fp, (long)off, SEEK_SET) == 0);
	CHECK_EQ(fread(code, 1, sizeof(code), fp), sizeof(code));
	fclose(fp);
	size_t skip = !memcmp(code, "\xf3\x0f\x1e\xfa", 4) ? 4 : 0;
	CHECK(!memcmp(code + skip, "\x55\x48\x89\xe5", 4));
	CHECK(pc >= f->addr + skip + 4);
	/* unknown without a file to read */
	CHECK_EQ(djp_func_after_prologue("/nonexistent/func_targets", f), f->addr);
	djp_funcs_free(t);

	snprintf(path, sizeof(path), "%s", djp_test_path(PROG));
	t = read_ok(path);
	f = by_name(t, "func_target_add");
	CHECK(f != NULL);
	CHECK_EQ(djp_func_after_prologue(path, f), f->addr);
	djp_funcs_free(t);
}

TEST(func_symbols_errors)
{
	char src[PATH_MAX], err[512];
	struct djp_func_table *t = (void *)1;
	uint64_t a[4];
	int ret;

	snprintf(src, sizeof(src), "%s", djp_test_path(SOURCE));
	struct {
		const char *path;
		int err;
	} cases[] = {
		{ src, -ENOEXEC },			/* a C file */
		{ "/nonexistent/func_targets", -ENOENT },
		{ "/tmp", -EISDIR },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *p = cases[i].path;
		err[0] = 0;
		ret = djp_funcs_read(p, &t, err, sizeof(err));
		CHECK_EQ(ret, cases[i].err);
		CHECK(t == NULL);
		CHECK(!strncmp(err, p, strlen(p)) && !strncmp(err + strlen(p), ": ", 2) && err[strlen(p) + 2]);
		CHECK(strchr(err, '\n') == NULL);
		err[0] = 0;
		ret = djp_lines_resolve(p, "func_targets.c:1", a, 4, err, sizeof(err));
		CHECK_EQ(ret, cases[i].err);
		CHECK(!strncmp(err, p, strlen(p)) && !strncmp(err + strlen(p), ": ", 2));
	}
	/* specs that are not FILE:LINE */
	const char *bad[] = { "func_targets.c", "func_targets.c:", ":12", "func_targets.c:12x", "func_targets.c:0",
			      "func_targets.c:-3" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		CHECK_EQ(djp_lines_resolve(djp_test_path(PROG), bad[i], a, 4, err, sizeof(err)), -EINVAL);
		CHECK(!strncmp(err, bad[i], strlen(bad[i])));
	}
	/* no room for an error: still the code */
	CHECK_EQ(djp_funcs_read(src, &t, NULL, 0), -ENOEXEC);
}

/*
 * cfi_pushes(): push, a nop between, pop, ret, its FDE from .cfi_startproc
 * to .cfi_endproc.  The call-frame information's rules change at the push
 * and at the pop; the function is still all of it.
 */
__asm__(".pushsection .text\n"
	".globl cfi_pushes\n"
	".type cfi_pushes,@function\n"
	"cfi_pushes:\n"
	"	.cfi_startproc\n"
	"	push %rbx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_rel_offset %rbx, 0\n"
	".globl cfi_pushes_nop\n"
	"cfi_pushes_nop:\n"
	"	nop\n"
	"	pop %rbx\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_restore %rbx\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size cfi_pushes, .-cfi_pushes\n"
	".popsection\n");
extern const char cfi_pushes[], cfi_pushes_nop[];

/* The bounds from the call-frame information are the FDE's, not those of
 * the row of rules around the address: an SDT probe's nop before a
 * function's epilogue was bounded by its last pop, and "crossed the
 * function's end" (python3.11's function__entry and function__return). */
TEST(func_from_cfi_is_the_whole_fde)
{
	struct object self = { .want = NULL };
	struct djp_func f;

	dl_iterate_phdr(find_object, &self);
	CHECK(self.found);
	CHECK_EQ(djp_func_from_cfi(self.path, (uintptr_t)cfi_pushes_nop - self.bias, &f), 0);
	CHECK_EQ(f.addr, (uintptr_t)cfi_pushes - self.bias);
	CHECK_EQ(f.size, 4);
}
