/* The bench's streaming read (kernels/bench_read.cu). Launcher contract as
** every kernels/<family>.h: callable from C, the stream as void* (a
** cudaStream_t), returns a cudaError_t as int (0 on success). */
#ifndef M40_KERNELS_BENCH_READ_H
#define M40_KERNELS_BENCH_READ_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Reads bytes0 at p0 and bytes1 at p1 (either may be NULL / 0; 16-byte
** aligned; a tail under 16 bytes is skipped) in one launch. sink: one
** device word the kernel never writes in practice. */
int m40k_bench_read(void *stream, const void *p0, size_t bytes0, const void *p1, size_t bytes1,
                    unsigned *sink);

#ifdef __cplusplus
}
#endif
#endif
