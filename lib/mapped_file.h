/*
 * Which file to read for an object a process has mapped: the file at its
 * path only while that is still the file mapped (lib/mapped_file.c).
 */
#ifndef DJP_LIB_MAPPED_FILE_H
#define DJP_LIB_MAPPED_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One line of /proc/PID/maps. */
struct djp_mapping {
	uintptr_t lo, hi, offset;
	unsigned long long inode;
	unsigned dev_major, dev_minor;
	bool exec;
	bool deleted;	 /* the path had " (deleted)" after it (removed here) */
	char path[4096]; /* "" for an anonymous mapping */
};

/* Is the file at `path` glibc's libc (libc.so.6, libc-2.NN.so)? */
bool djp_path_is_libc(const char *path);

/* Parse one maps line; false if it is not one. */
bool djp_mapping_parse(const char *line, struct djp_mapping *m);
/* The mapping of process `pid` (0: this one) that holds `addr`: 0, or
 * -ENOENT, or -errno of reading its maps. */
int djp_mapping_at(pid_t pid, uintptr_t addr, struct djp_mapping *m);
/* The path to open for the file `m` maps: its own path while the file there
 * is the one mapped (same device and inode), else the mapping's entry in
 * /proc/PID/map_files (which needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE),
 * else /proc/PID/exe when that is it.  0, or -ESTALE when the mapped file
 * can no longer be reached. */
int djp_mapping_file(pid_t pid, const struct djp_mapping *m, char *out, size_t outsz);

#endif
