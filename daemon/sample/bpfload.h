/*
 * What libbpf says while the daemon's BPF objects load (bpfload.c), for the three of
 * them (the sampler, the events, the wait histograms): each line kept for debug under
 * the loader's prefix, and the first warning, which says what broke, kept for the
 * error the loader reports.
 */
#ifndef RQB_BPFLOAD_H
#define RQB_BPFLOAD_H

#include <stddef.h>

/*
 * Before a load: libbpf's messages go to the debug log, each line after prefix (a
 * static string, "" for none), and the first warning is forgotten.
 */
void bpfload_begin(const char *prefix);
/*
 * Why a load failed with err, into why: the capabilities it needs where the kernel
 * refused, else strerror and libbpf's first warning since bpfload_begin.
 */
void bpfload_why(int err, char *why, size_t why_len);

#endif
