// Chunked, gradient half: fixed-point moves of one edge into the row accumulators (order-free int sums).
// CHUNK_NEG_BATCH: negative rows loaded together here. 4 keeps the persistent kernel at 64 registers for 2-D
// layouts, so 4 blocks of 256 threads fit per multiprocessor: on large graphs a thread then walks fewer edges
// of a chunk between two grid barriers.
#ifndef CHUNK_NEG_BATCH
#define CHUNK_NEG_BATCH 4
#endif
template <class Rows>
__device__ __forceinline__ void chunk_edge(const Rows& rows, u64* acc, int4 r, u64 seed, int t, const Curve& cv,
                                           float alpha) {
    float y0[DIM], yi[DIM], tm[DIM];
    edge_moves<CHUNK_NEG_BATCH>(rows, r.y, r.z, r.x, r.w, seed, t, cv, alpha, y0, yi, tm);
#pragma unroll
    for (int d = 0; d < DIM; ++d) {
        acc_add(acc + (i64)r.y * DIM + d, to_fixed(__fsub_rn(yi[d], y0[d])));
        acc_add(acc + (i64)r.z * DIM + d, to_fixed(tm[d]));
    }
}

// Chunked, apply half. A row takes its chunk sum per coordinate: a coordinate whose sum is 0 keeps its bits,
// which equals applying 0 (and keeps -0.0 as the CPU engine does).
#if UMV_VECTOR_ATOMICS && DIM == 2
__device__ __forceinline__ float2 apply_sums(float2 y, ulonglong2 s) {
    return make_float2(s.x != 0ULL ? apply_fixed(y.x, s.x) : y.x, s.y != 0ULL ? apply_fixed(y.y, s.y) : y.y);
}
#endif

// By edges: the two rows of an edge of the chunk (its head h and tail t, never the same row) each take their
// accumulator exactly once (atomicExch hands the sum to one thread, 0 to the others) and clear it. Both rows'
// exchanges are issued before either row is written, so their round trips overlap (an exchange may not pass an
// earlier store, so row after row would chain them). A 2-D row on Hopper takes both sums in one 128-bit
// exchange and is read and written as one 8-byte access.
__device__ __forceinline__ void apply_edge(float* Y, u64* acc, int h, int t) {
#if UMV_VECTOR_ATOMICS && DIM == 2
    float2 yh = __ldcg(reinterpret_cast<const float2*>(Y + (i64)h * 2));  // in flight with the exchanges
    float2 yt = __ldcg(reinterpret_cast<const float2*>(Y + (i64)t * 2));
    ulonglong2 sh = atomicExch(reinterpret_cast<ulonglong2*>(acc + (i64)h * 2), make_ulonglong2(0ULL, 0ULL));
    ulonglong2 st = atomicExch(reinterpret_cast<ulonglong2*>(acc + (i64)t * 2), make_ulonglong2(0ULL, 0ULL));
    if ((sh.x | sh.y) != 0ULL) __stcg(reinterpret_cast<float2*>(Y + (i64)h * 2), apply_sums(yh, sh));
    if ((st.x | st.y) != 0ULL) __stcg(reinterpret_cast<float2*>(Y + (i64)t * 2), apply_sums(yt, st));
#else
    const int v[2] = {h, t};
    float y[2][DIM];
    u64 s[2][DIM];
#pragma unroll
    for (int k = 0; k < 2; ++k) {
#pragma unroll
        for (int d = 0; d < DIM; ++d) {  // every load and exchange in flight together: only who gets s != 0 writes
            y[k][d] = __ldcg(Y + (i64)v[k] * DIM + d);
            s[k][d] = atomicExch(acc + (i64)v[k] * DIM + d, 0ULL);
        }
    }
#pragma unroll
    for (int k = 0; k < 2; ++k) {
#pragma unroll
        for (int d = 0; d < DIM; ++d)
            if (s[k][d] != 0ULL) __stcg(Y + (i64)v[k] * DIM + d, apply_fixed(y[k][d], s[k][d]));
    }
#endif
}

// By rows: row v takes its own sum. One thread per row, so plain loads and stores replace the exchanges, and the
// rows are walked in order (coalesced). Unless a chunk touches few of the rows, this sweep costs less than two
// random exchanges per edge (buffered's single chunk touches each row ~15 times an epoch, so most of its
// exchanges would find a sum that another edge of the row already took).
__device__ __forceinline__ void apply_row(float* Y, u64* acc, int v) {
#if UMV_VECTOR_ATOMICS && DIM == 2
    ulonglong2 s = __ldcg(reinterpret_cast<const ulonglong2*>(acc + (i64)v * 2));
    if ((s.x | s.y) == 0ULL) return;
    float2 y = __ldcg(reinterpret_cast<const float2*>(Y + (i64)v * 2));
    __stcg(reinterpret_cast<ulonglong2*>(acc + (i64)v * 2), make_ulonglong2(0ULL, 0ULL));
    __stcg(reinterpret_cast<float2*>(Y + (i64)v * 2), apply_sums(y, s));
#else
#pragma unroll
    for (int d = 0; d < DIM; ++d) {
        u64 s = __ldcg(acc + (i64)v * DIM + d);
        if (s != 0ULL) {
            __stcg(Y + (i64)v * DIM + d, apply_fixed(__ldcg(Y + (i64)v * DIM + d), s));
            __stcg(acc + (i64)v * DIM + d, 0ULL);
        }
    }
#endif
}

// Whether the apply of a chunk of `edges` edges sweeps all n rows (apply_rows) rather than walking its edges
// (apply_edges): when its 2 * edges row places reach SWEEP_PCT percent of the row count (0 always sweeps). The
// same for every thread of a launch. A sweep reads every row once, coalesced; walking the edges costs two random
// exchanges per edge. Timed on million-point graphs, the sweep won with chunks whose row places reached about a
// quarter of the rows and lost at about an eighth: 20 lies between.
#ifndef SWEEP_PCT
#define SWEEP_PCT 20
#endif
__device__ __forceinline__ bool sweep_rows(int edges, int n) { return 200LL * edges >= (i64)SWEEP_PCT * n; }

// The two ways to apply a chunk, thread by thread (stride: the grid's threads). Rows are walked by the linear
// thread index, so a warp's rows are contiguous; edges from position `from` (the caller's spread_index).
__device__ __forceinline__ void apply_rows(float* Y, u64* acc, int n, int stride) {
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += stride) apply_row(Y, acc, v);
}

__device__ __forceinline__ void apply_edges(float* Y, u64* acc, const int4* __restrict__ active, int from, int hi,
                                            int stride) {
    for (int q = from; q < hi; q += stride) {
        int4 r = load_last(active + q);
        apply_edge(Y, acc, r.y, r.z);
    }
}

// Grid-wide barrier for the persistent kernels (all their blocks are resident: the grid is sized from the
// occupancy calculator). A ticket barrier: *bar counts every arrival since the counter was made, so round r
// ends when it reaches (r + 1) * gridDim.x. One thread per block takes a ticket with an acquire-release atomic
// (publishing its block's writes, ordered before it by __syncthreads) and waits with acquire loads until the
// counter reaches the end of its round; the last arrival's own atomic releases everyone. It never resets,
// so it stays valid across launches of the same grid size (a 64-bit count does not wrap). One atomic per block
// and round makes it faster than a count-and-generation barrier, which resets its count
// (bench/experiments/barrier_bench.py times both).
__device__ __forceinline__ void grid_barrier(u64* bar) {
    __syncthreads();
    if (threadIdx.x == 0) {
        u64 ticket, now;
        asm volatile("atom.acq_rel.gpu.global.add.u64 %0, [%1], 1;" : "=l"(ticket) : "l"(bar) : "memory");
        u64 round_end = (ticket / gridDim.x + 1ULL) * gridDim.x;
        for (now = ticket + 1ULL; now < round_end;)
            asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(now) : "l"(bar) : "memory");
    }
    __syncthreads();
}

// Chunked, all chunks of one epoch in one launch: gradient, barrier, apply, barrier, per chunk. A thread's
// first edge of a chunk is read one chunk ahead (the active list does not change during the epoch) and kept
// in registers for the apply half.
// PERSIST_THREADS threads per block; PERSIST_MINB > 0 asks the compiler to fit that many blocks on a
// multiprocessor (registers capped to match): a chunk's edges are spread over more threads, so each walks
// fewer of them between two barriers.
#ifndef PERSIST_THREADS
#define PERSIST_THREADS 256
#endif
#ifndef PERSIST_MINB
#define PERSIST_MINB 0
#endif
#if PERSIST_MINB > 0
#define PERSIST_BOUNDS __launch_bounds__(PERSIST_THREADS, PERSIST_MINB)
#else
#define PERSIST_BOUNDS __launch_bounds__(PERSIST_THREADS)
#endif

extern "C" __global__ void PERSIST_BOUNDS chunked_persistent(float* Y, u64* acc, const int4* __restrict__ active,
                                              const int* __restrict__ n_act, int n_chunks,
                                              const int* __restrict__ ep, u64 seed, int n, float a, float b,
                                              float c_att, float c_rep, u64* bar) {
    load_pow_tables();
    Curve cv = make_curve(a, b, c_att, c_rep, n);
    L2Rows rows = {Y};
    int t = epoch_t(ep);
    float alpha = epoch_alpha(ep);
    int m = *n_act;
    int stride = gridDim.x * blockDim.x;
    int first = spread_index();
    int lo, hi;
    chunk_range(m, n_chunks, 0, &lo, &hi);
    int4 rec = lo + first < hi ? active[lo + first] : make_int4(0, 0, 0, 0);
    for (int c = 0; c < n_chunks; ++c) {
        int lo_next = hi, hi_next = hi;
        if (c + 1 < n_chunks) chunk_range(m, n_chunks, c + 1, &lo_next, &hi_next);
        int4 rec_next = lo_next + first < hi_next ? active[lo_next + first] : make_int4(0, 0, 0, 0);
        if (lo < hi) {  // every block skips the same empty chunks
            bool mine = lo + first < hi;
            if (mine) chunk_edge(rows, acc, rec, seed, t, cv, alpha);
            for (int q = lo + first + stride; q < hi; q += stride) chunk_edge(rows, acc, active[q], seed, t, cv, alpha);
            grid_barrier(bar);
            if (sweep_rows(hi - lo, n)) {
                apply_rows(Y, acc, n, stride);
            } else {  // the thread's first edge is in registers already
                if (mine) apply_edge(Y, acc, rec.y, rec.z);
                apply_edges(Y, acc, active, lo + first + stride, hi, stride);
            }
            grid_barrier(bar);
        }
        lo = lo_next;
        hi = hi_next;
        rec = rec_next;
    }
}
