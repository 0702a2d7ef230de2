/*
 * The probe-script front end: `djp FILE` / `djp -e SCRIPT` with SystemTap's
 * options (-c CMD, -x PID, -o FILE, -l PP, -L PP).  See docs/SCRIPTS.md.
 */
#ifndef DJP_SCRIPT_H
#define DJP_SCRIPT_H

#include "source.h"

/* Run the command line (argv[0] is the program name); returns the exit
 * status, as stap: 0, or 1 on any error. */
int djp_script_main(int argc, char **argv);

/* The live source (live.c): a -c command or -x process through its agent. */
int djp_script_live_open(const struct djp_source_opts *o, struct djp_source **out, char *err, size_t errsz);

/* The kernel source (tools/djp/source/kernel.c) with the script's ^C and
 * -w (klive.c): the markers of loaded modules through
 * /dev/djprobe, for kernel.mark and module(...).mark points. */
int djp_script_klive_open(struct djp_source **out, char *err, size_t errsz);

#endif
