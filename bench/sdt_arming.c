/*
 * How many of the SDT probes of the Debian packages on this machine djp
 * can only arm as int3 probes (a signal a hit), and why.  Every ELF object
 * under the system's program and library directories that carries a
 * .note.stapsdt section (python3.11, postgres, libstdc++, glibc, and any
 * other package that ships probes) is listed with `djp list --json`, which
 * says each site's arming and, for an int3 one, the reason no jump fits.
 * A site no jump can reach is armed with the kernel's uprobe where the
 * tool may use it (run as root: this bench's case), else as an int3.
 * Rows: each site that is not a jump (its package, probe, object, arming
 * and the reason no jump fits), then the share of int3 sites among all
 * (target: at most 5%) and of those the kernel's uprobe serves.
 *
 * Objects are found by their section headers (libelf, no section data
 * read), each once (by device and inode: /lib is /usr/lib on Debian), and
 * symbolic links are not followed.
 */
#include <dirent.h>
#include <fcntl.h>
#include <gelf.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const roots[] = { "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/libexec" };

struct seen {
	dev_t dev;
	ino_t ino;
};

static struct seen *seen;
static size_t nseen, capseen;
static char djp[PATH_MAX];
static long sites, int3, uprobe, objects;

static int has_sdt(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), found = 0;
	Elf *e;
	size_t shstrndx;

	if (fd < 0)
		return 0;
	if ((e = elf_begin(fd, ELF_C_READ, NULL)) && elf_kind(e) == ELF_K_ELF && !elf_getshdrstrndx(e, &shstrndx)) {
		for (Elf_Scn *s = NULL; !found && (s = elf_nextscn(e, s));) {
			GElf_Shdr sh;
			const char *name;
			if (gelf_getshdr(s, &sh) && sh.sh_type == SHT_NOTE &&
			    (name = elf_strptr(e, shstrndx, sh.sh_name)) && !strcmp(name, ".note.stapsdt"))
				found = 1;
		}
	}
	elf_end(e);
	close(fd);
	return found;
}

/* The package that owns path, as dpkg says ("?" when none does). */
static void package_of(const char *path, char *out, size_t sz)
{
	char cmd[PATH_MAX + 64];
	FILE *p;

	snprintf(out, sz, "?");
	snprintf(cmd, sizeof(cmd), "dpkg -S '%s' 2>/dev/null", path);
	if ((p = popen(cmd, "r"))) {
		if (fgets(out, (int)sz, p))
			out[strcspn(out, ":")] = 0;
		pclose(p);
	}
}

/* A string field of a JSON line (no escapes in the names djp prints). */
static void field(const char *line, const char *key, char *out, size_t sz)
{
	char pat[64];
	const char *v;

	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	out[0] = 0;
	if ((v = strstr(line, pat)))
		snprintf(out, sz, "%.*s", (int)strcspn(v + strlen(pat), "\""), v + strlen(pat));
}

static void list(const char *path)
{
	char cmd[2 * PATH_MAX + 64], line[8192], pkg[256] = "";
	FILE *p;

	snprintf(cmd, sizeof(cmd), "'%s' list --json '%s' 2>/dev/null", djp, path);
	if (!(p = popen(cmd, "r")))
		return;
	objects++;
	while (fgets(line, sizeof(line), p)) {
		char name[256], prov[256], why[256];
		if (!strstr(line, "\"arming\":"))
			continue;
		bool is_int3 = strstr(line, "\"arming\":\"int3\"") != NULL;
		sites++;
		if (!is_int3 && !strstr(line, "\"arming\":\"uprobe\""))
			continue;
		if (is_int3)
			int3++;
		else
			uprobe++;
		if (!pkg[0])
			package_of(path, pkg, sizeof(pkg));
		field(line, "name", name, sizeof(name));
		field(line, "provider", prov, sizeof(prov));
		field(line, is_int3 ? "int3_why" : "uprobe_why", why, sizeof(why));
		printf("%s: %s %s:%s (%s) | %s | - | -\n", is_int3 ? "int3" : "uprobe", pkg, prov, name, path,
		       why[0] ? why : "?");
	}
	pclose(p);
}

static void walk(const char *dir, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		struct stat st;
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &st))
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (depth < 5)
				walk(path, depth + 1);
			continue;
		}
		if (!S_ISREG(st.st_mode) || st.st_size < 64)
			continue;
		for (size_t i = 0; i < nseen; i++)
			if (seen[i].dev == st.st_dev && seen[i].ino == st.st_ino)
				goto next;
		if (nseen == capseen && !(seen = realloc(seen, sizeof(*seen) * (capseen = capseen * 2 + 256))))
			exit(1);
		seen[nseen++] = (struct seen){ st.st_dev, st.st_ino };
		if (has_sdt(path))
			list(path);
	next:;
	}
	closedir(d);
}

int main(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n < 0 || elf_version(EV_CURRENT) == EV_NONE)
		return 1;
	exe[n] = 0;
	snprintf(djp, sizeof(djp), "%s/../djp", dirname(exe));
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		walk(roots[i], 0);
	printf("SDT sites of the machine's packages armed as int3 (%ld objects with probes) | %ld of %ld (%.1f%%) | "
	       "<= 5%% | %s\n",
	       objects, int3, sites, sites ? 100.0 * int3 / sites : 0, sites && int3 * 20 <= sites ? "ok" : "over");
	printf("SDT sites of the machine's packages armed with the kernel's uprobe (no jump fits) | %ld of %ld "
	       "(%.1f%%) | - | -\n",
	       uprobe, sites, sites ? 100.0 * uprobe / sites : 0);
	return 0;
}
