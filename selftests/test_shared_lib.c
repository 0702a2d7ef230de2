/* libdjprobe.so as a user gets it: a program linked against the build tree
 * starts (the libdjprobe.so -> .so.0 -> .so.0.MINOR.PATCH chain), and the
 * library exports exactly the symbols djprobe.map names and docs/ABI.md
 * lists, each djp_ one declared in an installed header. */
#include <fcntl.h>
#include <gelf.h>
#include <glob.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/wait.h>

#include "harness.h"

#ifndef DJP_SRC_DIR
#define DJP_SRC_DIR "."
#endif

#define MAX_SYMS 64

struct names {
	unsigned n;
	char v[MAX_SYMS][64];
};

static bool has(const struct names *s, const char *name)
{
	for (unsigned i = 0; i < s->n; i++)
		if (!strcmp(s->v[i], name))
			return true;
	return false;
}

static void add(struct names *s, const char *name, size_t len)
{
	CHECK(s->n < MAX_SYMS && len < sizeof(s->v[0]));
	memcpy(s->v[s->n], name, len);
	s->v[s->n++][len] = 0;
}

/* A whole file of the source tree, NUL-terminated; freed by the caller. */
static char *slurp(const char *rel)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", DJP_SRC_DIR, rel);
	FILE *f = fopen(path, "r");
	if (!f)
		djp_test_fail(__FILE__, __LINE__, "%s: cannot open", path);
	char *buf = malloc(1 << 20);
	CHECK(buf);
	size_t n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

/* The defined global symbols in the dynamic symbol table of `path`. */
static void exported(const char *path, struct names *out)
{
	int fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	CHECK(elf_version(EV_CURRENT) != EV_NONE);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	CHECK(e);
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		CHECK(gelf_getshdr(scn, &sh));
		if (sh.sh_type != SHT_DYNSYM)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		CHECK(d && sh.sh_entsize);
		for (size_t i = 1; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			CHECK(gelf_getsym(d, (int)i, &sym));
			if (sym.st_shndx == SHN_UNDEF || GELF_ST_BIND(sym.st_info) == STB_LOCAL)
				continue;
			const char *name = elf_strptr(e, sh.sh_link, sym.st_name);
			CHECK(name && *name);
			add(out, name, strlen(name));
		}
	}
	elf_end(e);
	close(fd);
}

/* The names of djprobe.map's global: list, comments skipped. */
static void map_names(struct names *out)
{
	char *map = slurp("djprobe.map");
	char *p = strstr(map, "global:"), *end = p ? strstr(p, "local:") : NULL;
	CHECK(p && end);
	for (p += 7; p < end;) {
		if (!strncmp(p, "/*", 2)) {
			char *c = strstr(p, "*/");
			CHECK(c);
			p = c + 2;
		} else if (*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) {
			size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
			if (p[n] != ';')
				djp_test_fail(__FILE__, __LINE__, "djprobe.map: \"%.*s\" is not a name and ';'", (int)n + 1,
					      p);
			add(out, p, n);
			p += n + 1;
		} else if (*p == ' ' || *p == '\t' || *p == '\n') {
			p++;
		} else {
			djp_test_fail(__FILE__, __LINE__, "djprobe.map: unexpected '%c' (a glob?)", *p);
		}
	}
	free(map);
}

TEST(shared_lib_exports_exactly_the_documented_symbols)
{
	struct names lib = { 0 }, map = { 0 };
	char *doc = slurp("docs/ABI.md"), *headers = NULL;
	size_t hlen = 0;
	glob_t g;
	char pattern[PATH_MAX];

	exported(djp_test_path("../libdjprobe.so"), &lib);
	map_names(&map);
	CHECK(map.n > 0);

	/* the installed headers, one after the other */
	snprintf(pattern, sizeof(pattern), "%s/include/djprobe/*.h", DJP_SRC_DIR);
	CHECK_EQ(glob(pattern, 0, NULL, &g), 0);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		char *h = slurp(g.gl_pathv[i] + strlen(DJP_SRC_DIR) + 1);
		size_t n = strlen(h);
		headers = realloc(headers, hlen + n + 1);
		CHECK(headers);
		memcpy(headers + hlen, h, n + 1);
		hlen += n;
		free(h);
	}
	globfree(&g);

	char *section = strstr(doc, "\n## The shared library\n");
	CHECK(section);
	for (unsigned i = 0; i < lib.n; i++)
		if (!has(&map, lib.v[i]))
			djp_test_fail(__FILE__, __LINE__, "libdjprobe.so exports %s, which djprobe.map does not name",
				      lib.v[i]);
	for (unsigned i = 0; i < map.n; i++) {
		char quoted[80], decl[80];
		if (!has(&lib, map.v[i]))
			djp_test_fail(__FILE__, __LINE__, "libdjprobe.so does not export %s", map.v[i]);
		snprintf(quoted, sizeof(quoted), "`%s`", map.v[i]);
		if (!strstr(section, quoted))
			djp_test_fail(__FILE__, __LINE__, "docs/ABI.md does not list %s", map.v[i]);
		snprintf(decl, sizeof(decl), " %s(", map.v[i]);
		if (!strncmp(map.v[i], "djp_", 4) && !strstr(headers, decl))
			djp_test_fail(__FILE__, __LINE__, "%s is declared in no installed header", map.v[i]);
	}
	/* the test hooks stay in the archive */
	CHECK(!has(&lib, "djp_sysops_fail_nth"));
	CHECK(!has(&lib, "djp_sysops_calls"));
	free(headers);
	free(doc);
}

TEST(shared_lib_linked_program_starts_from_the_build_tree)
{
	char build[PATH_MAX], cmd[3 * PATH_MAX], out[PATH_MAX] = "", real[PATH_MAX], want[PATH_MAX + 32];
	int st;

	CHECK(realpath(djp_test_path(".."), build));
	snprintf(cmd, sizeof(cmd), "LD_LIBRARY_PATH='%s' '%s' 2>&1", build, djp_test_path("link/linked"));
	FILE *p = popen(cmd, "r");
	CHECK(p);
	if (!fgets(out, sizeof(out), p))
		out[0] = 0;
	st = pclose(p);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "link/linked: status %#x: %s", st, out);
	out[strcspn(out, "\n")] = 0;
	/* loaded by its SONAME, which is a link to the versioned file */
	const char *base = strrchr(out, '/');
	CHECK(base);
	CHECK_STR(base, "/libdjprobe.so.0");
	CHECK(realpath(out, real));
	snprintf(want, sizeof(want), "%s/libdjprobe.so.0.", build);
	if (strncmp(real, want, strlen(want)))
		djp_test_fail(__FILE__, __LINE__, "%s is %s, not %s*", out, real, want);
	CHECK(realpath(djp_test_path("../libdjprobe.so"), want));
	CHECK_STR(real, want);
}

/* libdjprobe.so as the dependency of a preloaded library, after libc in
 * the search order: its interposers still find libc's functions (they
 * once found none, and python3 died at its first sigaction). */
TEST(shared_lib_as_a_preloaded_librarys_dependency)
{
	char build[PATH_MAX], cmd[3 * PATH_MAX], out[512] = "";
	long hits = -1;
	int st, id = -1;

	CHECK(realpath(djp_test_path(".."), build));
	snprintf(cmd, sizeof(cmd), "LD_LIBRARY_PATH='%s' LD_PRELOAD='%s' /usr/bin/python3 -c 'import os, signal, sys; signal.signal(signal.SIGUSR1, signal.SIG_IGN); os.kill(os.getpid(), signal.SIGUSR1); sys.exit(3)' 2>&1", build,
		 djp_test_path("link/libpreloaded.so"));
	FILE *p = popen(cmd, "r");
	CHECK(p);
	if (!fgets(out, sizeof(out), p))
		out[0] = 0;
	st = pclose(p);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 3)
		djp_test_fail(__FILE__, __LINE__, "python3: status %#x: %s", st, out);
	CHECK(sscanf(out, "preloaded: connect %d hits %ld", &id, &hits) == 2);
	CHECK_EQ(id, 0);
	CHECK(hits >= 1); /* os.getpid() */
}
