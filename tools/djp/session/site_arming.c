/*
 * How the engine will arm a site, told from its file: `djp list` says which
 * sites become jumps and why the others stay int3 probes.
 *
 * A marker's 6-byte NOP becomes a jump.  An SDT probe's 1-byte nop is
 * widened to the run of instructions a jump may cover from it, under the
 * rules kernel/points.c applies at run time: the function symbol around
 * it (with a size; else the bounds of its call-frame information), the
 * decoder's rules for the run (arch/x86/insn_reloc.c:
 * whole instructions inside the function, a call only last, every one
 * relocatable, no jump of the function into the run, no indirect jump
 * whose targets are not known),
 * and no direct branch anywhere in the object into it
 * (arch/x86/branch_targets.c); where the function ends or a branch lands
 * too soon after the nop, a run that starts at an earlier instruction
 * under the same rules.  The same functions on the file's bytes
 * give the same verdict, but for what only the running process knows: a
 * thread inside the run when it is armed, another probe's site inside it,
 * no memory in reach for a trampoline.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch/x86/arch.h"
#include "lib/func_symbols.h"
#include "tools/djp/session/site_arming.h"

/* The last object asked about: a listing asks object by object. */
static struct {
	char *path;
	struct djp_func_table *t;
	struct djp_branch_map map;
	int fd;
	bool ok;
} cache = { .fd = -1 };

static bool load(const char *path)
{
	char err[256];
	if (cache.path && !strcmp(cache.path, path))
		return cache.ok;
	free(cache.path);
	djp_funcs_free(cache.t);
	djp_branch_map_free(&cache.map);
	if (cache.fd >= 0)
		close(cache.fd);
	cache.t = NULL;
	cache.path = strdup(path);
	cache.fd = open(path, O_RDONLY | O_CLOEXEC);
	cache.ok = cache.path && cache.fd >= 0 && !djp_funcs_read(path, &cache.t, err, sizeof(err));
	if (cache.ok) {
		uint64_t *starts = djp_funcs_starts(cache.t);
		cache.ok = !djp_branch_targets_of_file(path, starts, starts ? cache.t->count : 0, &cache.map);
		free(starts);
	}
	return cache.ok;
}

bool djp_site_arming(const char *path, const struct djp_marker_info *m, const char **why, unsigned *pre)
{
	struct djp_func cf;
	const struct djp_func *f;
	uint64_t off;
	unsigned len = 0;
	uint8_t *b;
	int err;

	*why = NULL;
	*pre = 0;
	if (m->site_len >= X86_JMP_REL32_LEN)
		return true;
	if (!load(path)) {
		*why = "the object's symbols or code cannot be read";
		return false;
	}
	if (!(f = djp_func_around(cache.t, path, m->site, &cf))) {
		*why = "no function symbol or call-frame information around the nop";
		return false;
	}
	if (djp_funcs_file_offset(cache.t, f->addr, &off) || !(b = malloc(f->size))) {
		*why = "the function's bytes cannot be read";
		return false;
	}
	if (pread(cache.fd, b, f->size, (off_t)off) != (ssize_t)f->size) {
		free(b);
		*why = "the function's bytes cannot be read";
		return false;
	}
	err = djp_jump_run(b, f->size, f->addr, m->site, &cache.map, 0, pre, &len, why);
	free(b);
	if (err)
		return false;
	return true;
}
