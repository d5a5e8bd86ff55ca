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

/* The "floor" of a weight read (session 33): the same read of bytes at p
** (16-byte aligned, the tail under 16 bytes skipped), and for every weight
** in it the least arithmetic an sm_52 GEMV must do -- wbits 4 (int4) or 8
** (int8): one LOP (the field masked in place, the exponent-zero decode
** without its PRMT) and one FFMA; 16 (fp16): one F2F and one FFMA -- with
** x in registers: no staging of x, no reduction, no store. Other wbits:
** cudaErrorInvalidValue (a plain read is m40k_bench_read). */
int m40k_bench_floor(void *stream, int wbits, const void *p, size_t bytes, unsigned *sink);

#ifdef __cplusplus
}
#endif
#endif
