/*
 * Probe scripts on kernel markers: the kernel source (tools/djp/source/
 * kernel.c) with the script's ^C and -w.
 */
#include "run/run.h"
#include "script.h"

int djp_script_klive_open(struct djp_source **out, char *err, size_t errsz)
{
	int rc = djp_kernel_source_open(out, err, errsz);

	if (rc == 0) {
		(*out)->interrupted = &run_interrupted;
		(*out)->quiet = script_no_warnings;
	}
	return rc;
}
