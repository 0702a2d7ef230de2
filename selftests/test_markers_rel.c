/* The reader on a relocatable object (ET_REL, as a kernel module is):
 * selftests/kmark/kmark.o, whose .markers sites are R_X86_64_PC64
 * relocations against .text and .text.unlikely, so the file holds 0 in
 * every site field.  Each site must come out as its offset in its own
 * section, which is checked against the 6-byte NOP found in the bytes of
 * the enclosing function (read here with libelf, independently of the
 * reader); and a file whose relocations are gone is refused. */
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "lib/markers.h"
#include "test_trace_util.h"

static const unsigned char nop6[6] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 };

/* The offset of the one NOP6 inside function fn of the object at path, and
 * its section's name in sec. */
static uint64_t nop_of(const char *path, const char *fn, char *sec, size_t secsz)
{
	int fd = open(path, O_RDONLY);
	Elf *e;
	Elf_Scn *scn = NULL, *symscn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;
	uint64_t found = UINT64_MAX;

	CHECK(fd >= 0 && elf_version(EV_CURRENT) != EV_NONE);
	e = elf_begin(fd, ELF_C_READ, NULL);
	CHECK(e && elf_getshdrstrndx(e, &shstrndx) == 0);
	while ((scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			symscn = scn;
	CHECK(symscn && gelf_getshdr(symscn, &sh));
	Elf_Data *sd = elf_getdata(symscn, NULL);
	for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
		GElf_Sym s;
		GElf_Shdr th;
		CHECK(gelf_getsym(sd, (int)i, &s));
		const char *name = elf_strptr(e, sh.sh_link, s.st_name);
		if (!name || strcmp(name, fn))
			continue;
		Elf_Scn *text = elf_getscn(e, s.st_shndx);
		CHECK(text && gelf_getshdr(text, &th));
		Elf_Data *td = elf_getdata(text, NULL);
		CHECK(td && s.st_value + s.st_size <= td->d_size);
		for (uint64_t o = s.st_value; o + 6 <= s.st_value + s.st_size; o++)
			if (!memcmp((const char *)td->d_buf + o, nop6, 6)) {
				CHECK(found == UINT64_MAX); /* one per function */
				found = o;
			}
		snprintf(sec, secsz, "%s", elf_strptr(e, shstrndx, th.sh_name));
	}
	elf_end(e);
	close(fd);
	CHECK(found != UINT64_MAX);
	return found;
}

TEST(reader_places_sites_of_a_relocatable_object)
{
	static const struct {
		const char *marker, *function, *format;
		unsigned nargs;
	} want[] = {
		{ "kmark_one", "kmark_first", "a=%d b=%ld", 2 },
		{ "kmark_two", "kmark_second", "n=%u", 1 },
		{ "kmark_three", "kmark_cold", "", 0 },
	};
	const char *path = djp_test_path("kmark/kmark.o");
	struct djp_marker_list *l = NULL;
	char err[512] = "", sec[64];
	bool nonzero = false;

	CHECK(djp_markers_read_file(path, 0, &l, err, sizeof(err)) == 0);
	CHECK_STR(err, "");
	CHECK(l->is_rel && !l->is_dyn);
	CHECK_EQ(l->count, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct djp_marker_info *m = NULL;
		for (size_t k = 0; k < l->count; k++)
			if (!strcmp(l->v[k].name, want[i].marker))
				m = &l->v[k];
		CHECK(m != NULL);
		CHECK_EQ(m->site, nop_of(path, want[i].function, sec, sizeof(sec)));
		CHECK(m->section != NULL);
		CHECK_STR(m->section, sec);
		CHECK(m->function != NULL);
		CHECK_STR(m->function, want[i].function);
		CHECK_STR(m->format, want[i].format);
		CHECK_EQ(m->nargs, want[i].nargs);
		nonzero |= m->site != 0;
	}
	CHECK(nonzero); /* an unrelocated reading says 0 for every one */
	djp_marker_list_free(l);
}

/* djp list prints the same offsets and the functions (read in the JSON
 * form, whose columns are not padded). */
TEST(djp_list_lists_a_relocatable_object)
{
	char *argv[] = { (char *)tt_djp(), "list", "--json", (char *)djp_test_path("kmark/kmark.o"), NULL };
	char path[PATH_MAX], line[160], sec[64];
	struct tproc *p;

	snprintf(path, sizeof(path), "%s", djp_test_path("kmark/kmark.o"));
	p = tt_spawn(argv, false, -1);
	snprintf(line, sizeof(line), "\"address\":\"0x%llx\",\"length\":6,\"function\":\"kmark_second\"",
		 (unsigned long long)nop_of(path, "kmark_second", sec, sizeof(sec)));
	CHECK(tt_wait_out(p, line, 5000));
	snprintf(line, sizeof(line), "\"address\":\"0x%llx\",\"length\":6,\"function\":\"kmark_cold\"",
		 (unsigned long long)nop_of(path, "kmark_cold", sec, sizeof(sec)));
	CHECK(tt_wait_out(p, line, 5000));
	CHECK_EQ(tt_finish(p, 5000), 0);
}

/* Without .rela.markers the sites cannot be placed: one line, no list. */
TEST(reader_refuses_a_relocatable_object_without_site_relocations)
{
	char dir[] = "/tmp/djp-rel-XXXXXX", path[PATH_MAX], cmd[3 * PATH_MAX], err[512] = "";
	struct djp_marker_list *l = NULL;
	int st;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/norel.o", dir);
	snprintf(cmd, sizeof(cmd), "objcopy --remove-section=.rela.markers %s %s", djp_test_path("kmark/kmark.o"), path);
	st = system(cmd);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(djp_markers_read_file(path, 0, &l, err, sizeof(err)) < 0);
	CHECK(l == NULL);
	CHECK(strstr(err, "3 records but 0 site relocations") != NULL);
	CHECK(strchr(err, '\n') == NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}
