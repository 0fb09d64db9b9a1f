// ------------------------------------------------------------------------------------------ strategies

// Chunk c of n_chunks over an active list of length n_act, cut as np.array_split cuts it.
__device__ __forceinline__ void chunk_range(int n_act, int n_chunks, int c, int* lo, int* hi) {
    int q = n_act / n_chunks, r = n_act % n_chunks;
    *lo = c * q + (c < r ? c : r);
    *hi = *lo + q + (c < r ? 1 : 0);
}

// Work index of a thread, spread so that consecutive warps of work land on different blocks (SMs).
__device__ __forceinline__ int spread_index() {
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    return ((warp * gridDim.x + blockIdx.x) << 5) + lane;
}

// Sequential: one thread walks the active list (small graphs and tests only: it uses one GPU thread).
extern "C" __global__ void epoch_sequential(float* Y, const int4* __restrict__ active, const int* __restrict__ n_act,
                                            const int* __restrict__ ep, u64 seed, int n, float a, float b,
                                            float c_att, float c_rep) {
    load_pow_tables();
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    Curve cv = make_curve(a, b, c_att, c_rep, n);
    PlainRows rows = {Y};
    int t = epoch_t(ep);
    float alpha = epoch_alpha(ep);
    int m = *n_act;
    for (int q = 0; q < m; ++q) {
        int4 r = active[q];
        float y0[DIM], yi[DIM], tm[DIM];
        edge_moves(rows, r.y, r.z, r.x, r.w, seed, t, cv, alpha, y0, yi, tm);
        store_row(Y, r.y, yi);
#pragma unroll
        for (int d = 0; d < DIM; ++d) Y[(i64)r.z * DIM + d] = __fadd_rn(Y[(i64)r.z * DIM + d], tm[d]);
    }
}

// Hogwild: every active edge in parallel on the live embedding; the head row is stored, the tail's move is
// added atomically (fewer lost updates than a plain read-modify-write; the result is racy either way).
// HOG_MINB > 0: fit that many 256-thread blocks per multiprocessor (more loads in flight, fewer registers).
#ifndef HOG_MINB
#define HOG_MINB 0
#endif
#if HOG_MINB > 0
#define HOG_BOUNDS __launch_bounds__(256, HOG_MINB)
#else
#define HOG_BOUNDS
#endif

extern "C" __global__ void HOG_BOUNDS epoch_hogwild(float* Y, const int4* __restrict__ active,
                                                    const int* __restrict__ n_act, const int* __restrict__ ep, u64 seed,
                                                    int n, float a, float b, float c_att, float c_rep) {
    load_pow_tables();
    Curve cv = make_curve(a, b, c_att, c_rep, n);
    PlainRows rows = {Y};
    int t = epoch_t(ep);
    float alpha = epoch_alpha(ep);
    int m = *n_act;
    for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < m; q += gridDim.x * blockDim.x) {
        int4 r = load_last(active + q);
        float y0[DIM], yi[DIM], tm[DIM];
        edge_moves(rows, r.y, r.z, r.x, r.w, seed, t, cv, alpha, y0, yi, tm);
        store_row(Y, r.y, yi);
        atomic_add_row(Y, r.z, tm);
    }
}
