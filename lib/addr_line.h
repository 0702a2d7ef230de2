/*
 * The source line of a code address, from an object's DWARF
 * (lib/addr_line.c).
 */
#ifndef DJP_LIB_ADDR_LINE_H
#define DJP_LIB_ADDR_LINE_H

#include <stddef.h>
#include <stdint.h>

/* The file and line of link-time address addr in the object at path (its
 * own DWARF, else its separate debug file's): 0 with file (the path the
 * line table names, made absolute with the unit's compilation
 * directory) and *line, or -ENOENT. */
int djp_addr_line(const char *path, uint64_t addr, char *file, size_t filesz, int *line);

#endif
