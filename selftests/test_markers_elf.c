/* The ELF reader on the example program (selftests/progs/markers_example.c)
 * at -O2 and -O0: every marker with its format, argument types, function
 * and source line; its SDT notes read alone; the load-bias computation. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <sys/wait.h>

#include "harness.h"
#include "lib/markers.h"

struct expect {
	const char *name, *function, *format;
	const char *types; /* size and sign of each argument, as SDT writes them */
};

/* Keep in step with selftests/progs/markers_example.c. */
static const struct expect example[] = {
	{ "ex_sizes", "ex_sizes", "a=%hhd b=%hhu c=%hd d=%hu e=%d f=%u g=%ld h=%lu", "-1 1 -2 2 -4 4 -8 8" },
	{ "ex_types", "ex_types", "flag=%d ch=%c col=%u sg=%d s=%s p=%p", "1 -1 4 -4 8 8" },
	{ "ex_immediates", "ex_immediates", "five=%d minus=%d big=%lu", "-4 -4 8" },
	{ "ex_globals", "ex_globals", "counter=%d total=%lu small=%hhd", "-4 8 -1" },
	{ "ex_memory", "ex_memory", "id=%ld len=%u tag=%c v=%d", "-8 4 -1 -4" },
	{ "ex_empty", "ex_empty", "", "" },
	{ "ex_format_only", "ex_empty", "a format without arguments", "" },
	{ "ex_twelve", "ex_twelve", "%ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld",
	  "-8 -8 -8 -8 -8 -8 -8 -8 -8 -8 -8 -8" },
	{ "ex_inlined", "main", "x=%d", "-4" },
};
#define NEXAMPLE (sizeof(example) / sizeof(example[0]))

static const struct djp_marker_info *find(const struct djp_marker_list *l, const char *name)
{
	const struct djp_marker_info *found = NULL;
	for (size_t i = 0; i < l->count; i++)
		if (!strcmp(l->v[i].name, name)) {
			CHECK(found == NULL);
			found = &l->v[i];
		}
	return found;
}

static void check_types(const struct djp_marker_info *m, const char *types)
{
	char buf[128] = "", *p = buf;
	for (unsigned i = 0; i < m->nargs; i++)
		p += sprintf(p, "%s%s%u", i ? " " : "", m->arg[i].is_signed ? "-" : "", m->arg[i].size);
	CHECK_STR(buf, types);
}

/* The source line the reader names must hold the MARK of that marker. */
static void check_source_line(const struct djp_marker_info *m)
{
	char path[PATH_MAX], line[512];
	FILE *f;
	unsigned n = 0;

	CHECK(m->file && m->line > 0);
	if (m->file[0] == '/')
		snprintf(path, sizeof(path), "%s", m->file);
	else /* relative to the source tree: build/selftests/../.. */
		snprintf(path, sizeof(path), "%s/%s", djp_test_path("../.."), m->file);
	CHECK((f = fopen(path, "r")) != NULL);
	while (fgets(line, sizeof(line), f) && ++n < m->line)
		;
	fclose(f);
	char want[128];
	snprintf(want, sizeof(want), "MARK(%s", m->name);
	if (!strstr(line, want))
		fprintf(stderr, "# %s:%u is \"%s\"\n", m->file, m->line, line);
	CHECK(n == m->line && strstr(line, want));
}

static struct djp_marker_list *read_ok(const char *path, unsigned flags)
{
	struct djp_marker_list *l = NULL;
	char err[512] = "";
	int ret = djp_markers_read_file(path, flags, &l, err, sizeof(err));
	if (ret)
		fprintf(stderr, "# %s\n", err);
	CHECK_EQ(ret, 0);
	return l;
}

static void check_example(const char *rel, bool exact_lines)
{
	struct djp_marker_list *l = read_ok(djp_test_path(rel), 0);
	CHECK_EQ(l->count, NEXAMPLE);
	CHECK(l->is_dyn); /* the default gcc output is a PIE */
	for (size_t i = 0; i < NEXAMPLE; i++) {
		const struct djp_marker_info *m = find(l, example[i].name);
		fprintf(stderr, "# %s %s\n", rel, example[i].name);
		CHECK(m != NULL);
		CHECK_STR(m->format, example[i].format);
		CHECK_STR(m->function, example[i].function);
		CHECK_EQ(m->site_len, 6);
		CHECK(!m->from_sdt && m->provider == NULL);
		check_types(m, example[i].types);
		CHECK(strstr(m->file, "markers_example.c"));
		if (exact_lines)
			check_source_line(m);
	}
	djp_marker_list_free(l);
}

TEST(reader_lists_every_marker_of_the_example)
{
	check_example("progs/markers_example", true);
}

/* gcc -O0 places the line-table row of a MARK after its NOP (gas emits a
 * .loc that precedes data directives at the next instruction), so only
 * the file is checked there; see marker.h's site emission. */
TEST(reader_lists_every_marker_of_the_example_O0)
{
	check_example("progs/markers_example-O0", false);
}

TEST(reader_sees_every_location_kind_at_O2)
{
	struct djp_marker_list *l = read_ok(djp_test_path("progs/markers_example"), 0);
	unsigned seen[5] = { 0 }, indexed = 0;
	for (size_t i = 0; i < l->count; i++)
		for (unsigned k = 0; k < l->v[i].nargs; k++) {
			const struct djp_argloc *a = &l->v[i].arg[k];
			seen[a->kind]++;
			indexed += a->kind == DJP_LOC_MEM && a->index != DJP_REG_NONE;
		}
	CHECK(seen[DJP_LOC_REG] > 0);
	CHECK(seen[DJP_LOC_MEM] > 0);
	CHECK(seen[DJP_LOC_IMM] >= 3);
	CHECK(seen[DJP_LOC_NONE] == 0);
	(void)indexed; /* whether v[i] stays (%rdi,%rdx,4) is the compiler's choice */

	const struct djp_marker_info *m = find(l, "ex_immediates");
	CHECK_EQ(m->arg[0].disp, 5);
	CHECK_EQ(m->arg[1].disp, -5);
	CHECK_EQ(m->arg[2].disp, 0x123456789);
	m = find(l, "ex_globals");
	for (unsigned k = 0; k < m->nargs; k++)
		if (m->arg[k].sym) /* a sym(%rip) must be resolved through .symtab */
			CHECK(m->arg[k].kind == DJP_LOC_ABS && m->arg[k].disp > 0);
	djp_marker_list_free(l);
}

TEST(reader_no_dwarf_flag_skips_positions)
{
	struct djp_marker_list *l = read_ok(djp_test_path("progs/markers_example"), DJP_READ_NO_DWARF);
	CHECK_EQ(l->count, NEXAMPLE);
	for (size_t i = 0; i < l->count; i++)
		CHECK(l->v[i].file == NULL && l->v[i].line == 0 && l->v[i].function == NULL);
	djp_marker_list_free(l);
}

static char *tmpdir(void)
{
	static char dir[] = "/tmp/djp-markers-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	return dir;
}

static void sh(const char *fmt, const char *a, const char *b)
{
	char cmd[3 * PATH_MAX];
	snprintf(cmd, sizeof(cmd), fmt, a, b);
	int st = system(cmd);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fprintf(stderr, "# failed: %s\n", cmd);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* The SDT notes describe the same sites as the records: read the notes
 * alone (no .markers) and compare. */
TEST(reader_falls_back_to_sdt_notes)
{
	char path[PATH_MAX], *dir = tmpdir();
	snprintf(path, sizeof(path), "%s/sdt-only", dir);
	sh("objcopy --remove-section=.markers %s %s", djp_test_path("progs/markers_example"), path);

	struct djp_marker_list *rec = read_ok(djp_test_path("progs/markers_example"), 0);
	struct djp_marker_list *sdt = read_ok(path, 0);
	CHECK_EQ(sdt->count, rec->count);
	for (size_t i = 0; i < rec->count; i++) {
		const struct djp_marker_info *a = &rec->v[i], *b = find(sdt, a->name);
		CHECK(b != NULL);
		CHECK(b->from_sdt);
		CHECK_STR(b->provider, "djp");
		CHECK_EQ(b->site, a->site);
		CHECK_EQ(b->site_len, 1);
		CHECK_STR(b->args, a->args);
		CHECK_EQ(b->nargs, a->nargs);
		CHECK_STR(b->format, "");
		CHECK_STR(b->function, a->function);
	}
	djp_marker_list_free(rec);
	djp_marker_list_free(sdt);

	/* DJP_READ_NO_SDT: an object without .markers then has none. */
	sdt = read_ok(path, DJP_READ_NO_SDT);
	CHECK_EQ(sdt->count, 0);
	djp_marker_list_free(sdt);
	sh("rm -rf %s%s", dir, "");
}

/* libstdc++ carries SDT probes (throw, catch, rethrow) in most builds. */
TEST(reader_reads_libstdcxx_sdt_notes)
{
	FILE *p = popen("g++ -print-file-name=libstdc++.so.6 2>/dev/null", "r");
	char path[PATH_MAX] = "";
	if (p) {
		if (!fgets(path, sizeof(path), p))
			path[0] = 0;
		pclose(p);
	}
	path[strcspn(path, "\n")] = 0;
	if (path[0] != '/' || access(path, R_OK))
		djp_test_fail(__FILE__, __LINE__, "no libstdc++.so.6 (g++ installs it, and make needs g++)");
	struct djp_marker_list *l = read_ok(path, DJP_READ_NO_DWARF);
	if (!l->count)
		djp_test_fail(__FILE__, __LINE__, "%s has no SDT notes (Debian 12's has them)", path);
	for (size_t i = 0; i < l->count; i++) {
		CHECK(l->v[i].from_sdt);
		CHECK_EQ(l->v[i].site_len, 1);
		CHECK(l->v[i].provider && l->v[i].name && l->v[i].site);
	}
	CHECK(find(l, "throw") != NULL);
	djp_marker_list_free(l);
}

TEST(reader_computes_load_bias_from_segments)
{
	struct djp_marker_list *l = read_ok(djp_test_path("progs/markers_example"), DJP_READ_NO_DWARF);
	uint64_t bias = 0;
	/* A PIE's first segment (offset 0, vaddr 0) mapped at 0x555555554000. */
	CHECK_EQ(djp_marker_list_bias(l, 0x555555554000ull, 0, &bias), 0);
	CHECK_EQ(bias, 0x555555554000ull);
	CHECK_EQ(djp_marker_list_bias(l, 0x1000, 1ull << 40, &bias), -ENOENT);
	djp_marker_list_free(l);
}

/* A .markers section of type SHT_NOBITS has no bytes in the file: libelf
 * hands out no buffer but the header's size, which the parser used to read
 * as records.  It is a bad file, refused with one line. */
TEST(reader_refuses_nobits_markers_section)
{
	char path[PATH_MAX], err[512] = "", *dir = tmpdir();
	struct djp_marker_list *l = NULL;
	int fd, ret, found = 0;
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	Elf *e;

	snprintf(path, sizeof(path), "%s/nobits", dir);
	sh("cp %s %s", djp_test_path("progs/markers_example"), path);
	CHECK(elf_version(EV_CURRENT) != EV_NONE);
	fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	e = elf_begin(fd, ELF_C_RDWR, NULL);
	CHECK(e && elf_getshdrstrndx(e, &shstrndx) == 0);
	elf_flagelf(e, ELF_C_SET, ELF_F_LAYOUT);
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr shdr;
		CHECK(gelf_getshdr(scn, &shdr));
		const char *name = elf_strptr(e, shstrndx, shdr.sh_name);
		if (name && !strcmp(name, ".markers")) {
			shdr.sh_type = SHT_NOBITS;
			CHECK(gelf_update_shdr(scn, &shdr));
			found = 1;
		}
	}
	CHECK(found);
	CHECK(elf_update(e, ELF_C_WRITE) >= 0);
	elf_end(e);
	close(fd);

	ret = djp_markers_read_file(path, 0, &l, err, sizeof(err));
	CHECK(ret < 0);
	CHECK(l == NULL);
	CHECK(strstr(err, ".markers") != NULL && strstr(err, "SHT_NOBITS") != NULL);
	CHECK(strchr(err, '\n') == NULL);
	sh("rm -rf %s%s", dir, "");
}
