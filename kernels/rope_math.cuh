/* The rotary angles that kernels/rope.cu (the ROPE op) and the attention
** node's fused RoPE + KV append (kernels/attention.cu) share, so that both
** rotate by bit-equal angles: θ_i computed on the host exactly as the
** reference (lib/ref/transformer.c: float exponent, double pow, rounded to
** float) for the first kRopeTab pairs and passed by value (the kernel
** parameter bank), powf past that; the angle float(pos·pos_scale)·θ_i. */
#ifndef M40_KERNELS_ROPE_MATH_CUH
#define M40_KERNELS_ROPE_MATH_CUH

#include <math.h>
#include <string.h>

namespace {

constexpr int kRopeTab = 256;

struct RopeArgs {
    float th[kRopeTab]; /* θ_i for i < min(half, kRopeTab) */
    float theta, pos_scale;
    int heads, head_dim, half;
};

__device__ __forceinline__ float rope_theta_i(const RopeArgs &a, int i) {
    if (i < kRopeTab) return a.th[i];
    return 1.0f / powf(a.theta, (float)(2 * i) / (float)(2 * a.half));
}

/* The host side: heads rotated per row, head_dim, rope_dims (even). */
inline RopeArgs rope_args(int heads, int head_dim, int rope_dims, float theta, float pos_scale) {
    /* The table depends on (theta, rope_dims) only, and a model asks for the
    ** same one at every layer: each host thread keeps its last (the double
    ** pows were ~1 us of host time a launch, a third of RoPE's per-call gap
    ** to a copy at 64 rows; bench/NOTES.md, session 12). */
    struct Memo {
        float theta;
        int rope_dims;
        float th[kRopeTab];
    };
    static thread_local Memo m = {0.0f, 0, {}};
    if (m.rope_dims != rope_dims || m.theta != theta) {
        for (int i = 0; i < kRopeTab; i++) {
            /* the reference's θ_i (m40__rope_angle): float exponent, double pow */
            float e = (float)(2 * i) / (float)rope_dims;
            m.th[i] = i < rope_dims / 2 ? 1.0f / (float)pow((double)theta, (double)e) : 0.0f;
        }
        m.theta = theta, m.rope_dims = rope_dims;
    }
    RopeArgs a;
    a.theta = theta, a.pos_scale = pos_scale;
    a.heads = heads, a.head_dim = head_dim, a.half = rope_dims / 2;
    memcpy(a.th, m.th, sizeof a.th);
    return a;
}

} // namespace

#endif
