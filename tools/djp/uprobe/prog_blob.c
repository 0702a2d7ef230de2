/*
 * The BPF program of the uprobes (record.bpf.c), compiled for the BPF
 * target by clang and carried inside djp as it is: djp needs no file of
 * its own to find at run time, and libbpf opens the copy in memory
 * (bpf_object__open_mem).  The make fragment (tools/djp/uprobe.mk) names
 * the object to include in DJP_UPROBE_BPF_OBJ and makes this file depend
 * on it.
 */
#ifndef DJP_UPROBE_BPF_OBJ
#error "DJP_UPROBE_BPF_OBJ: the path of the compiled record.bpf.o (tools/djp/uprobe.mk)"
#endif

__asm__(".pushsection .rodata.djp_uprobe_prog,\"a\",@progbits\n"
	".balign 8\n"
	".globl djp_uprobe_prog_start\n"
	".hidden djp_uprobe_prog_start\n"
	"djp_uprobe_prog_start:\n"
	".incbin \"" DJP_UPROBE_BPF_OBJ "\"\n"
	".globl djp_uprobe_prog_end\n"
	".hidden djp_uprobe_prog_end\n"
	"djp_uprobe_prog_end:\n"
	".popsection\n");
