// GPU kernels for exact kNN (umapviz/graph/knn_gpu.py).
//
// Exact kNN = a GEMM tile of scores (cuBLAS) + select_candidates (a few more candidates than k per row)
// + refine (exact float64 distances of the candidates, as umapviz/graph/knn_cpu.py's refine_candidates computes them,
// then the k best by (distance, index), the point itself first) + with TF32, flag_rounding_misses (rows whose
// candidates the GEMM's rounding may have cut short, which the caller searches again in FP32).
// Row r of a tile is query row_ids[r].

#define SEL_THREADS 256
#define SEL_L 16  // candidates each selecting thread keeps
#define SEL_VEC 4  // consecutive columns a selecting thread takes at a time (one 16-byte copy)
#ifndef SEL_STAGES
#define SEL_STAGES 4  // a selecting thread's copies in flight, plus the one it compares
#endif

typedef long long i64;
typedef unsigned long long u64;

// Float -> unsigned key with the same order (-inf smallest, +inf largest); NaN is not expected.
__device__ __forceinline__ unsigned int ordered(float s) {
    unsigned int u = __float_as_uint(s);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// cp.async: a 16-byte copy of floats from global to shared memory that the thread does not wait for; `bytes`
// (0..16) of it are read and the rest is zero-filled. Groups of copies are committed and waited for in order.
// Before Ampere (sm_80) there is no cp.async: the copy is done at once, and committing and waiting do nothing.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
__device__ __forceinline__ void copy16_async(void* smem, const void* gmem, int bytes) {
    unsigned int dst = (unsigned int)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(gmem), "r"(bytes) : "memory");
}
// The same, 8 bytes (cp.async.cg copies 16 bytes only; .ca takes 8).
__device__ __forceinline__ void copy8_async(void* smem, const void* gmem, int bytes) {
    unsigned int dst = (unsigned int)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(dst), "l"(gmem), "r"(bytes) : "memory");
}
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wait_copies() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }
#else
__device__ __forceinline__ void copy16_async(void* smem, const void* gmem, int bytes) {
#pragma unroll
    for (int u = 0; u < 4; ++u)
        static_cast<float*>(smem)[u] = 4 * u < bytes ? static_cast<const float*>(gmem)[u] : 0.0f;
}
__device__ __forceinline__ void copy8_async(void* smem, const void* gmem, int bytes) {
#pragma unroll
    for (int u = 0; u < 4; ++u)
        static_cast<unsigned short*>(smem)[u] = 2 * u < bytes ? static_cast<const unsigned short*>(gmem)[u] : 0;
}
__device__ __forceinline__ void commit_copies() {}
template <int N>
__device__ __forceinline__ void wait_copies() {}
#endif

// Score s of column j into a thread's kept list (its SEL_L smallest, sorted; ties keep the earlier column).
__device__ __forceinline__ void keep(float* bs, int* bi, float s, int j) {
    if (s < bs[SEL_L - 1]) {
        bs[SEL_L - 1] = s;
        bi[SEL_L - 1] = j;
#pragma unroll
        for (int q = SEL_L - 1; q > 0; --q) {
            if (bs[q] < bs[q - 1]) {
                float ts = bs[q]; bs[q] = bs[q - 1]; bs[q - 1] = ts;
                int ti = bi[q]; bi[q] = bi[q - 1]; bi[q - 1] = ti;
            }
        }
    }
}

// The score of column j in a row of G: the kernels below must round it alike.
__device__ __forceinline__ float score_of(float add, float scale, float g) {
    return __fadd_rn(add, __fmul_rn(scale, g));
}

// One block per row r of the score tile G (row-major, leading dimension ld, a multiple of 4 so that rows are
// 16-byte aligned): the m columns j with the smallest col_add[j] + scale * G[r, j] (ties: smaller j); with
// self_first (the queries are the points themselves) the row's own point (row_ids[r]) always first.
// The scan takes the row in stages of SEL_THREADS * SEL_VEC columns; thread t takes columns 4t .. 4t + 3 of each
// stage. Each thread copies its own scores and column terms into shared memory SEL_STAGES - 1 stages ahead
// (cp.async, 16 bytes a copy) and reads back only what it copied itself, so no barrier is needed: the copies
// overlap the comparisons, which scalar loads a few ahead did not; the stage count barely matters (2 to 5).
// Each thread keeps its SEL_L best in registers; a block-wide tournament then merges them. If a thread's list
// runs dry while the tournament still wants more, the row is flagged in `overflow` (its true candidates
// might have been cut), and the caller redoes that row another way.
// Scores as the GEMM wrote them: float32 (TF32 and FP32 GEMMs) or IEEE half (the FP16 GEMM, as raw bits), four
// consecutive columns a copy (16 or 8 bytes).
__device__ __forceinline__ float half_to_float(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ void copy_scores(void* smem, const float* g, int cols) {
    copy16_async(smem, g, 4 * cols);
}
__device__ __forceinline__ void copy_scores(void* smem, const unsigned short* g, int cols) {
    copy8_async(smem, g, 2 * cols);
}
__device__ __forceinline__ void read_scores(const float4* slot, const float*, float* gv) {
    float4 g = *slot;
    gv[0] = g.x; gv[1] = g.y; gv[2] = g.z; gv[3] = g.w;
}
__device__ __forceinline__ void read_scores(const float4* slot, const unsigned short*, float* gv) {
    uint2 g = *reinterpret_cast<const uint2*>(slot);
    gv[0] = half_to_float((unsigned short)(g.x & 0xffffu));
    gv[1] = half_to_float((unsigned short)(g.x >> 16));
    gv[2] = half_to_float((unsigned short)(g.y & 0xffffu));
    gv[3] = half_to_float((unsigned short)(g.y >> 16));
}

template <typename T>
__device__ __forceinline__ void select_rows(const T* __restrict__ G, int n, i64 ld,
                                            const float* __restrict__ col_add, float scale,
                                            const i64* __restrict__ row_ids, int self_first, int m,
                                            int* __restrict__ cand,
                                            int* __restrict__ overflow) {
    // The stages' copies and, after the scan, the tournament's keys share one buffer.
    constexpr int STAGE_BYTES = SEL_STAGES * 2 * SEL_THREADS * 16;
    constexpr int KEY_BYTES = SEL_THREADS * SEL_L * 8;
    __shared__ __align__(16) unsigned char pool[STAGE_BYTES > KEY_BYTES ? STAGE_BYTES : KEY_BYTES];
    __shared__ u64 warp_min[2][SEL_THREADS / 32];  // by round parity: one barrier a round (see below)
    float4* stage = reinterpret_cast<float4*>(pool);  // [SEL_STAGES][scores, column terms][SEL_THREADS]
    u64* keys = reinterpret_cast<u64*>(pool);
    int r = blockIdx.x;
    i64 me = row_ids[r];
    const T* row = G + (i64)r * ld;
    float bs[SEL_L];
    int bi[SEL_L];
#pragma unroll
    for (int q = 0; q < SEL_L; ++q) {
        bs[q] = __int_as_float(0x7f800000);  // +inf
        bi[q] = -1;
    }
    const int stage_cols = SEL_THREADS * SEL_VEC;
    const int n_stages = (n + stage_cols - 1) / stage_cols;
    const int mine = threadIdx.x * SEL_VEC;
    // Queue this thread's copies of stage p (an empty group past the last stage keeps the waits uniform).
    auto issue = [&](int p) {
        if (p < n_stages) {
            int j = p * stage_cols + mine;
            int bytes = j < n ? 4 * min(SEL_VEC, n - j) : 0;
            float4* slot = stage + (p % SEL_STAGES) * 2 * SEL_THREADS + threadIdx.x;
            copy_scores(slot, bytes ? row + j : row, bytes / 4);
            copy16_async(slot + SEL_THREADS, bytes ? col_add + j : col_add, bytes);
        }
        commit_copies();
    };
    for (int p = 0; p < SEL_STAGES - 1; ++p) issue(p);
    for (int p = 0; p < n_stages; ++p) {
        issue(p + SEL_STAGES - 1);
        wait_copies<SEL_STAGES - 1>();  // this thread's copies of stage p have landed
        const float4* slot = stage + (p % SEL_STAGES) * 2 * SEL_THREADS + threadIdx.x;
        float4 add = slot[SEL_THREADS];
        float gv[SEL_VEC];
        read_scores(slot, row, gv);
        const float av[SEL_VEC] = {add.x, add.y, add.z, add.w};
        int j0 = p * stage_cols + mine;
#pragma unroll
        for (int u = 0; u < SEL_VEC; ++u) {
            int j = j0 + u;
            if (j >= n) break;
            float s = (self_first && j == me) ? __int_as_float(0xff800000) : score_of(av[u], scale, gv[u]);
            keep(bs, bi, s, j);
        }
    }
    wait_copies<0>();
    __syncthreads();  // every thread is done with its stage slots before the keys overwrite them
    const u64 EMPTY = 0xffffffffffffffffULL;
#pragma unroll
    for (int q = 0; q < SEL_L; ++q)
        keys[threadIdx.x * SEL_L + q] = bi[q] < 0 ? EMPTY : (((u64)ordered(bs[q]) << 32) | (unsigned int)bi[q]);
    bool full = bi[SEL_L - 1] >= 0;
    __syncwarp();
    // Round c: each warp's smallest head key goes to warp_min[c & 1]; after one barrier every thread takes the
    // smallest of those itself (keys are unique, so exactly one thread owns it). Round c + 1 writes the other
    // buffer, and round c + 2 writes this one again only after every thread has passed round c + 1's barrier,
    // so after it has read round c's keys.
    int head = 0;
    unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    for (int c = 0; c < m; ++c) {
        u64 mine_key = head < SEL_L ? keys[threadIdx.x * SEL_L + head] : EMPTY;
        u64 v = mine_key;
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            u64 o = __shfl_xor_sync(0xffffffffu, v, off);
            v = o < v ? o : v;
        }
        if (lane == 0) warp_min[c & 1][warp] = v;
        __syncthreads();
        u64 w = warp_min[c & 1][0];
#pragma unroll
        for (int q = 1; q < SEL_THREADS / 32; ++q) w = warp_min[c & 1][q] < w ? warp_min[c & 1][q] : w;
        if (w == EMPTY) {
            if (threadIdx.x == 0) cand[(i64)r * m + c] = -1;
        } else if (mine_key == w) {
            cand[(i64)r * m + c] = (int)(unsigned int)(w & 0xffffffffu);
            ++head;
            if (head == SEL_L && full && c + 1 < m) overflow[r] = 1;
        }
    }
}

extern "C" __global__ void select_candidates(const float* __restrict__ G, int n, i64 ld,
                                             const float* __restrict__ col_add, float scale,
                                             const i64* __restrict__ row_ids, int self_first, int m,
                                             int* __restrict__ cand, int* __restrict__ overflow) {
    select_rows(G, n, ld, col_add, scale, row_ids, self_first, m, cand, overflow);
}

// The same on FP16 scores (their raw bits; ld in halves, a multiple of 4 so that rows are 8-byte aligned).
extern "C" __global__ void select_candidates_h(const unsigned short* __restrict__ G, int n, i64 ld,
                                               const float* __restrict__ col_add, float scale,
                                               const i64* __restrict__ row_ids, int self_first, int m,
                                               int* __restrict__ cand, int* __restrict__ overflow) {
    select_rows(G, n, ld, col_add, scale, row_ids, self_first, m, cand, overflow);
}

// One block per query row Q[row_ids[r]], one thread per candidate (blockDim.x >= m): exact float64 distance to the
// candidate row of X (operation for operation as knn_cpu.py's refine_candidates), then each thread's rank by
// (distance, index) decides where it lands among the row's k outputs. With self_first (Q is X) self is ranked first
// (distance -1, written as 0). Launched by knn_gpu.py's refine_candidates_gpu.
extern "C" __global__ void refine(const float* __restrict__ X, const float* __restrict__ Q, int d,
                                  const i64* __restrict__ row_ids, int self_first, const int* __restrict__ cand,
                                  int m, int k, int cosine,
                                  int* __restrict__ out_idx, float* __restrict__ out_dist) {
    extern __shared__ unsigned char smem[];
    double* sd = (double*)smem;
    int* si = (int*)(sd + blockDim.x);
    int r = blockIdx.x;
    i64 i = row_ids[r];
    int c = threadIdx.x;
    int j = c < m ? cand[(i64)r * m + c] : -1;
    double val = __longlong_as_double(0x7ff0000000000000LL);  // +inf for an empty slot
    const float* xi = Q + i * d;
    if (j >= 0) {
        const float* xj = X + (i64)j * d;
        if (cosine) {
            double xi_norm = 0.0, xj_norm = 0.0;
            for (int f = 0; f < d; ++f) {
                double a = (double)xi[f];
                xi_norm = __dadd_rn(xi_norm, __dmul_rn(a, a));
            }
            xi_norm = __dsqrt_rn(xi_norm);
            for (int f = 0; f < d; ++f) {
                double b = (double)xj[f];
                xj_norm = __dadd_rn(xj_norm, __dmul_rn(b, b));
            }
            xj_norm = __dsqrt_rn(xj_norm);
            if (xi_norm == 0.0 && xj_norm == 0.0) {
                val = 0.0;
            } else if (xi_norm == 0.0 || xj_norm == 0.0) {
                val = 1.0;
            } else {  // 1 - cos = |u - v|^2 / 2 for unit u, v: no cancellation near 0, exactly 0 for duplicates
                double acc = 0.0;
                for (int f = 0; f < d; ++f) {
                    double diff = __dsub_rn(__ddiv_rn((double)xi[f], xi_norm), __ddiv_rn((double)xj[f], xj_norm));
                    acc = __dadd_rn(acc, __dmul_rn(diff, diff));
                }
                val = __dmul_rn(0.5, acc);
            }
        } else {
            double acc = 0.0;
            for (int f = 0; f < d; ++f) {
                double diff = __dsub_rn((double)xi[f], (double)xj[f]);
                acc = __dadd_rn(acc, __dmul_rn(diff, diff));
            }
            val = __dsqrt_rn(acc);
        }
        if (self_first && (i64)j == i) val = -1.0;
    }
    sd[c] = val;
    si[c] = j < 0 ? 0x7fffffff : j;
    __syncthreads();
    int rank = 0;
    int my_i = si[c];
    for (int q = 0; q < blockDim.x; ++q) {
        double o = sd[q];
        int oi = si[q];
        rank += (o < val) || (o == val && oi < my_i);
    }
    if (rank < k) {
        out_idx[(i64)r * k + rank] = j;
        out_dist[(i64)r * k + rank] = j < 0 ? __int_as_float(0x7f800000) : (float)(val > 0.0 ? val : 0.0);
    }
}

// With TF32 under precision "auto", after refine, one block per row r of the score tile G (SEL_THREADS threads):
// may a column that the selection left out lie nearer than the row's k-th neighbour? The GEMM's rounding moves
// column j's score by at most err_j = norms[j] * (q_err[r] + sq_err * norms[j]) from the exact score (knn_gpu.py's
// rounding_bounds). Left out are the columns whose (score, column) key exceeds the largest key among the row's m
// candidates (the selection keeps the m smallest keys). The true k-th neighbour's score is at most score + err of
// the refined k-th neighbour, out_idx[r, k - 1]; a left-out column whose score - err_j reaches that may be a
// neighbour the row missed, and the row is flagged in `suspect` (its query is searched again in FP32). Self
// (self_first) is a candidate by rule and is skipped. The bounds are compared in float64, so their own rounding
// cannot hide a miss.
extern "C" __global__ void flag_rounding_misses(const float* __restrict__ G, int n, i64 ld,
                                                const float* __restrict__ col_add, float scale,
                                                const float* __restrict__ norms, const float* __restrict__ q_err,
                                                float sq_err, const i64* __restrict__ row_ids, int self_first,
                                                const int* __restrict__ cand, int m, const int* __restrict__ out_idx,
                                                int k, int* __restrict__ suspect) {
    __shared__ u64 warp_max[SEL_THREADS / 32];
    int r = blockIdx.x;
    i64 me = row_ids[r];
    const float* row = G + (i64)r * ld;
    int kth = out_idx[(i64)r * k + k - 1];
    if (kth < 0 || (self_first && kth == me)) return;  // the whole block: no neighbour beyond self to miss
    u64 cut = 0;
    for (int c = threadIdx.x; c < m; c += blockDim.x) {
        int j = cand[(i64)r * m + c];
        if (j >= 0 && !(self_first && j == me)) {
            u64 key = ((u64)ordered(score_of(col_add[j], scale, row[j])) << 32) | (unsigned int)j;
            cut = key > cut ? key : cut;
        }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        u64 o = __shfl_xor_sync(0xffffffffu, cut, off);
        cut = o > cut ? o : cut;
    }
    if ((threadIdx.x & 31u) == 0) warp_max[threadIdx.x >> 5] = cut;
    __syncthreads();
    cut = warp_max[0];
#pragma unroll
    for (int q = 1; q < SEL_THREADS / 32; ++q) cut = warp_max[q] > cut ? warp_max[q] : cut;
    double qe = (double)q_err[r];
    double zk = (double)norms[kth];
    double limit = (double)score_of(col_add[kth], scale, row[kth]) + zk * (qe + (double)sq_err * zk);
    auto may_miss = [&](int j, float g, float add, float norm) {
        if (self_first && j == me) return false;
        float s = score_of(add, scale, g);
        double zj = (double)norm;
        return (double)s - zj * (qe + (double)sq_err * zj) <= limit &&
               (((u64)ordered(s) << 32) | (unsigned int)j) > cut;
    };
    // 16-byte loads (rows of G, col_add and norms start 16-byte aligned); the last n % 4 columns one at a time.
    int hit = 0;
    for (int v = threadIdx.x; v < n / 4 && !hit; v += blockDim.x) {
        float4 g = reinterpret_cast<const float4*>(row)[v];
        float4 a = reinterpret_cast<const float4*>(col_add)[v];
        float4 z = reinterpret_cast<const float4*>(norms)[v];
        int j = 4 * v;
        hit = may_miss(j, g.x, a.x, z.x) || may_miss(j + 1, g.y, a.y, z.y) || may_miss(j + 2, g.z, a.z, z.z) ||
              may_miss(j + 3, g.w, a.w, z.w);
    }
    for (int j = (n / 4) * 4 + threadIdx.x; j < n && !hit; j += blockDim.x)
        hit = may_miss(j, row[j], col_add[j], norms[j]);
    if (__syncthreads_or(hit) && threadIdx.x == 0) suspect[r] = 1;
}
