/*
 * A stripped object's symbols and DWARF are in a separate debug file
 * (Debian's -dbg and -dbgsym packages): found by the object's build-id
 * under /usr/lib/debug/.build-id, else by its .gnu_debuglink name in the
 * directories gdb looks in, and used only when its build-id is the
 * object's, so that a debug file of another build is never believed.
 */
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch/x86/arch.h"
#include "lib/elf_debug.h"
#include "lib/errline.h"

size_t djp_elf_build_id(Elf *elf, const void **id)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || !(d = elf_getdata(scn, NULL)) || !d->d_buf)
			continue;
		while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0)
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((const char *)d->d_buf + name_off, "GNU", 4) && nh.n_descsz) {
				*id = (const char *)d->d_buf + desc_off;
				return nh.n_descsz;
			}
	}
	return 0;
}

/* The .gnu_debuglink name, or NULL. */
static const char *debuglink(Elf *elf, size_t shstrndx)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		const char *name;
		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".gnu_debuglink") || !(d = elf_getdata(scn, NULL)) || !d->d_buf || !d->d_size ||
		    !memchr(d->d_buf, 0, d->d_size))
			continue;
		return d->d_buf;
	}
	return NULL;
}

bool djp_elf_debug_file(Elf *elf, size_t shstrndx, const char *path,
			bool (*try)(void *ctx, const char *cand, const void *id, size_t n), void *ctx)
{
	static const char *const forms[] = { "%s/%s", "%s/.debug/%s", "/usr/lib/debug%s/%s" };
	char cand[4096], dir[4096];
	const unsigned char *id;
	const char *link = debuglink(elf, shstrndx), *slash;
	size_t n = djp_elf_build_id(elf, (const void **)&id), k;

	if (!n)
		return false; /* nothing to check a candidate against */
	k = (size_t)snprintf(cand, sizeof(cand), "/usr/lib/debug/.build-id/%02x/", id[0]);
	for (size_t i = 1; i < n && k + 3 < sizeof(cand); i++)
		k += (size_t)snprintf(cand + k, sizeof(cand) - k, "%02x", id[i]);
	snprintf(cand + k, sizeof(cand) - k, ".debug");
	if (try(ctx, cand, id, n))
		return true;
	if (!link || !(slash = strrchr(path, '/')))
		return false;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
		snprintf(cand, sizeof(cand), forms[f], dir, link);
		if (strcmp(cand, path) && try(ctx, cand, id, n))
			return true;
	}
	return false;
}

bool djp_dwarf_cu_at(Dwarf *dw, uint64_t addr, Dwarf_Die *cudie)
{
	Dwarf_CU *cu = NULL;
	uint8_t unit_type;

	if (dwarf_addrdie(dw, addr, cudie))
		return true;
	while (dwarf_get_units(dw, cu, &cu, NULL, &unit_type, cudie, NULL) == 0)
		if (unit_type != DW_UT_type && unit_type != DW_UT_split_type && dwarf_haspc(cudie, addr) > 0)
			return true;
	return false;
}

int djp_elf_open(const char *path, int *fd, Elf **elf, struct stat *stp, char *err, size_t errsz)
{
	struct stat st;
	GElf_Ehdr eh;
	int ret;

	*elf = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return djp_errline(err, errsz, -ENOSYS, path, "libelf is too old");
	if ((*fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
		return djp_errline(err, errsz, -errno, path, "%s", strerror(errno));
	if (fstat(*fd, &st))
		ret = djp_errline(err, errsz, -errno, path, "%s", strerror(errno));
	else if (S_ISDIR(st.st_mode))
		ret = djp_errline(err, errsz, -EISDIR, path, "is a directory");
	else if (!S_ISREG(st.st_mode))
		ret = djp_errline(err, errsz, -EINVAL, path, "not a regular file");
	else if (!(*elf = elf_begin(*fd, ELF_C_READ_MMAP, NULL)) || elf_kind(*elf) != ELF_K_ELF)
		ret = djp_errline(err, errsz, -ENOEXEC, path, "not an ELF file");
	else if (gelf_getclass(*elf) != ELFCLASS64)
		ret = djp_errline(err, errsz, -ENOEXEC, path, "not a 64-bit ELF file (32-bit objects are not supported)");
	else if (!gelf_getehdr(*elf, &eh))
		ret = djp_errline(err, errsz, -ENOEXEC, path, "truncated ELF file (incomplete ELF header)");
	else if (eh.e_machine != ARCH_ELF_MACHINE)
		ret = djp_errline(err, errsz, -ENOEXEC, path, "not an x86-64 ELF file (machine %u)", eh.e_machine);
	else {
		if (stp)
			*stp = st;
		return 0;
	}
	if (*elf)
		elf_end(*elf);
	*elf = NULL;
	close(*fd);
	*fd = -1;
	return ret;
}
