/*
 * The file behind a mapping.
 *
 * A library is read by path to learn its markers; but a package upgrade
 * copies the new version next to the old and renames it over: the path
 * then names another file, whose marker addresses mean nothing in the old
 * mapping, and using them writes into the middle of instructions.  The
 * kernel knows which file is mapped: /proc/PID/maps gives its device and
 * inode (and " (deleted)" once no name points to it), and /proc/PID/
 * map_files/LO-HI opens it whatever became of its name.  Opening those
 * links needs CAP_SYS_ADMIN (or CAP_CHECKPOINT_RESTORE), so the path is
 * read whenever stat says it is still the mapped file, map_files only when
 * it is not, and /proc/PID/exe serves the main program to anyone.  When
 * none of them reaches the mapped file the answer is -ESTALE, and the
 * caller leaves the object alone: an object not read is never patched.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lib/mapped_file.h"

bool djp_mapping_parse(const char *line, struct djp_mapping *m)
{
	unsigned long long lo, hi, off;
	char perms[8];
	int pos = 0;
	size_t len;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &lo, &hi, perms, &off, &m->dev_major, &m->dev_minor,
		   &m->inode, &pos) < 7)
		return false;
	m->lo = (uintptr_t)lo;
	m->hi = (uintptr_t)hi;
	m->offset = (uintptr_t)off;
	m->exec = perms[2] == 'x';
	snprintf(m->path, sizeof(m->path), "%s", pos ? line + pos : "");
	m->path[strcspn(m->path, "\n")] = 0;
	len = strlen(m->path);
	m->deleted = len > 10 && !strcmp(m->path + len - 10, " (deleted)");
	if (m->deleted)
		m->path[len - 10] = 0;
	return true;
}

int djp_mapping_at(pid_t pid, uintptr_t addr, struct djp_mapping *m)
{
	char path[64], line[4096 + 256];
	FILE *f;
	int err = -ENOENT;

	/* Our own: the calling thread's view, not the leader's, whose maps
	 * are empty once the main thread has called pthread_exit. */
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/thread-self/maps");
	if (!(f = fopen(path, "re")))
		return -errno;
	while (err && fgets(line, sizeof(line), f))
		if (djp_mapping_parse(line, m) && addr >= m->lo && addr < m->hi)
			err = 0;
	fclose(f);
	return err;
}

static bool is_mapped_file(const char *path, const struct djp_mapping *m)
{
	struct stat st;
	return stat(path, &st) == 0 && st.st_ino == m->inode && major(st.st_dev) == m->dev_major &&
	       minor(st.st_dev) == m->dev_minor;
}

int djp_mapping_file(pid_t pid, const struct djp_mapping *m, char *out, size_t outsz)
{
	char proc[32];

	if (pid)
		snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	else
		snprintf(proc, sizeof(proc), "/proc/self");
	if (!m->deleted && m->path[0] == '/' && is_mapped_file(m->path, m)) {
		snprintf(out, outsz, "%s", m->path);
		return 0;
	}
	snprintf(out, outsz, "%s/map_files/%lx-%lx", proc, (unsigned long)m->lo, (unsigned long)m->hi);
	if (access(out, R_OK) == 0 && is_mapped_file(out, m))
		return 0;
	/* the leader's exe is gone with it (pthread_exit); a thread's is not */
	snprintf(out, outsz, "%s/exe", pid ? proc : "/proc/thread-self");
	if (is_mapped_file(out, m))
		return 0;
	return -ESTALE;
}

bool djp_path_is_libc(const char *path)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	return !strncmp(b, "libc.so", 7) || !strncmp(b, "libc-", 5);
}
