/*
 * Addresses of a traced process to function names, for usymname(),
 * usymdata(), umodname() and the backtraces: the object mapped at the
 * address (/proc/PID/maps) and the function symbol around it in that
 * object's file (lib/func_symbols.c).
 */
#ifndef DJP_SCRIPT_USYM_H
#define DJP_SCRIPT_USYM_H

#include <stdbool.h>
#include <stdint.h>

struct usym {
	const char *name;   /* the function, or NULL when no symbol holds the address */
	uint64_t off, size; /* the address's offset into it, and its size */
	const char *module; /* the object's path, or NULL when no object is mapped there */
	/* the address's offset into the object's mapping that holds it, and
	 * the mapping's size: what stap says of an address no symbol holds */
	uint64_t map_off, map_size;
	/* the address as the object's file has it (link time), when the
	 * object could be read */
	uint64_t link;
	bool has_link;
};

/* Read (again) what pid has mapped now, while it lives: at the start of a
 * trace, and when it has loaded something since.  Events are read after
 * the fact, and the process may be gone by then. */
void usym_remember(int32_t pid);

/* An object pid loaded while traced, as the agent's marker log names it:
 * its site `name` (as the log names it) at run-time address addr.  Its
 * code mapping is worked out from its file, for a process that may have
 * exited before anyone looked at its mappings again. */
void usym_object(int32_t pid, const char *path, uint64_t addr, const char *name);

/* The same in whichever traced process has an object mapped at addr (a
 * child of fork has its parent's): for what is not one event's. */
bool usym_lookup_any(uint64_t addr, struct usym *out);

/* Look `addr` up in process pid: true with *out, false when no object of
 * the process holds it (or the process is gone and was never looked at).
 * The strings live as long as the tool. */
bool usym_lookup(int32_t pid, uint64_t addr, struct usym *out);

#endif
