// ------------------------------------------------------------------------------------------ schedule

// The schedule is computed for a window of W <= SCHED_WMAX epochs per pass (t0 .. t0 + W - 1): each
// position's state stays in registers across the window and is read and written once, instead of once per
// epoch; each epoch of the window gets its own active list. A position whose due epoch (ceil(next): the
// edge is active in epoch t when next <= t, i.e. when ceil(next) <= t) lies past the window costs 4 bytes.
#define SCHED_WMAX 8

// One active epoch of a position (as engine_cpu.schedule): advances next and next_neg, returns n_neg.
// eps_neg = eps / negative_sample_rate is recomputed (one correctly rounded division, as on the host).
__device__ __forceinline__ int advance(double& next_s, double& next_neg, double eps, double eps_neg, int t) {
    double nn_f = floor(__ddiv_rn(__dsub_rn((double)t, next_neg), eps_neg));
    i64 nn = (i64)nn_f;
    if (!(nn_f == nn_f)) nn = (i64)0x8000000000000000ULL;  // NaN converts to INT64_MIN on the host
    if (nn < 0) nn = 0;
    next_s = __dadd_rn(next_s, eps);
    next_neg = __dadd_rn(next_neg, __dmul_rn((double)nn, eps_neg));
    return (int)nn;
}

// The epochs of t0 .. t0 + W - 1 in which a position whose next due time is next_s is active (bit w: epoch
// t0 + w), without moving its state: the comparisons and sums of simulate below, so the bits are the epochs
// simulate will find active.
__device__ __forceinline__ unsigned activity(double next_s, double e, int t0, int W) {
    unsigned bits = 0u;
#pragma unroll
    for (int w = 0; w < SCHED_WMAX; ++w) {
        if (w < W && next_s <= (double)(t0 + w)) {
            bits |= 1u << w;
            next_s = __dadd_rn(next_s, e);
        }
    }
    return bits;
}

// Position p over the window, unless the caller knows it is idle (due = false): nn[w] = n_neg in epoch t0 + w,
// or -1 when inactive; next_s/next_neg get the new state and e the position's eps. Returns whether the
// state moved.
__device__ __forceinline__ bool simulate(const double* next_in, const double* next_neg_in, const double* eps,
                                         double nsr, int p, bool due, int t0, int W, int* nn, double& next_s,
                                         double& next_neg, double& e) {
#pragma unroll
    for (int w = 0; w < SCHED_WMAX; ++w) nn[w] = -1;
    if (!due) return false;
    next_s = next_in[p];
    next_neg = next_neg_in[p];
    e = eps[p];
    double e_neg = __ddiv_rn(e, nsr);
    bool moved = false;
#pragma unroll
    for (int w = 0; w < SCHED_WMAX; ++w) {
        if (w < W && next_s <= (double)(t0 + w)) {
            nn[w] = advance(next_s, next_neg, e, e_neg, t0 + w);
            moved = true;
        }
    }
    return moved;
}

// Per epoch of the window, the block's active count (counts[w * n_blocks + block]); with `emit`, each
// thread's rank among its block's active positions of that epoch (warp offsets in warp_off, lane rank from
// the ballot).
__device__ __forceinline__ void window_ballots(const int* nn, int W, unsigned* ballots,
                                               int (*warp_off)[SCHED_BLOCK / 32], int* counts, bool scan) {
    unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
#pragma unroll
    for (int w = 0; w < SCHED_WMAX; ++w) {
        ballots[w] = __ballot_sync(0xffffffffu, w < W && nn[w] >= 0);
        if (lane == 0) warp_off[w][warp] = __popc(ballots[w]);
    }
    __syncthreads();
    if ((int)threadIdx.x < W) {
        int w = threadIdx.x, total = 0, nw = blockDim.x >> 5;
        for (int q = 0; q < nw; ++q) {
            int v = warp_off[w][q];
            if (scan) warp_off[w][q] = total;
            total += v;
        }
        if (counts) counts[w * gridDim.x + blockIdx.x] = total;
    }
    __syncthreads();
}

// The schedule's passes read each position's activity over the window from act[p] (bit w: active in epoch
// t0 + w), which the previous window's emit pass wrote (win_mask after a reset): the count pass then reads one
// byte per position instead of its float64 state, and positions idle through the window cost a byte in
// the emit pass too. due[p] = ceil(next) lets emit skip the state of positions not due before the next
// window ends.

// Position p's activity bits over epochs t0 .. t0 + W - 1 from its state as it stands (0 when not due by then).
__device__ __forceinline__ unsigned char window_bits(const int* __restrict__ due, const double* __restrict__ next_s,
                                                     const double* __restrict__ eps, int p, int t0, int W) {
    return due[p] <= t0 + W - 1 ? (unsigned char)activity(next_s[p], eps[p], t0, W) : (unsigned char)0;
}

// Pass 0 (after a reset, or when the window does not follow the last one): act for epochs t0 .. t0 + W - 1.
extern "C" __global__ void win_mask(const int* __restrict__ due, const double* __restrict__ next_s,
                                    const double* __restrict__ eps, int nnz, int t0, int W,
                                    unsigned char* __restrict__ act) {
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= nnz) return;
    act[p] = window_bits(due, next_s, eps, p, t0, W);
}

// Pass 1: per epoch of the window, the number of active positions in each block.
extern "C" __global__ void win_count(const unsigned char* __restrict__ act, int nnz, int W, int* __restrict__ counts) {
    __shared__ int warp_off[SCHED_WMAX][SCHED_BLOCK / 32];
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned bits = p < nnz ? act[p] : 0u;
    int nn[SCHED_WMAX];
    unsigned ballots[SCHED_WMAX];
#pragma unroll
    for (int w = 0; w < SCHED_WMAX; ++w) nn[w] = (bits >> w) & 1u ? 0 : -1;
    window_ballots(nn, W, ballots, warp_off, counts, false);
}

// Pass 2 (one block per epoch of the window): exclusive scan of that epoch's block counts; the total is the
// epoch's active count.
extern "C" __global__ void win_scan(const int* __restrict__ counts, int n_blocks, int* __restrict__ offsets,
                                    int* __restrict__ n_active) {
    __shared__ int warp_sums[SCHED_BLOCK / 32];
    __shared__ int total;
    const int* in = counts + (i64)blockIdx.x * n_blocks;
    int* out = offsets + (i64)blockIdx.x * n_blocks;
    int carry = 0;
    unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    for (int base = 0; base < n_blocks; base += blockDim.x) {
        int idx = base + threadIdx.x;
        int v = idx < n_blocks ? in[idx] : 0;
        int incl = v;
#pragma unroll
        for (int off = 1; off < 32; off <<= 1) {
            int o = __shfl_up_sync(0xffffffffu, incl, off);
            if ((int)lane >= off) incl += o;
        }
        if (lane == 31) warp_sums[warp] = incl;
        __syncthreads();
        if (warp == 0) {
            int nw = blockDim.x >> 5;
            int ws = (int)lane < nw ? warp_sums[lane] : 0;
            int winc = ws;
#pragma unroll
            for (int off = 1; off < 32; off <<= 1) {
                int o = __shfl_up_sync(0xffffffffu, winc, off);
                if ((int)lane >= off) winc += o;
            }
            if ((int)lane < nw) warp_sums[lane] = winc - ws;
            if ((int)lane == nw - 1) total = winc;
        }
        __syncthreads();
        if (idx < n_blocks) out[idx] = carry + warp_sums[warp] + incl - v;
        carry += total;
        __syncthreads();
    }
    if (threadIdx.x == 0) n_active[blockIdx.x] = carry;
}

// SCHED_MINB > 0: fit that many blocks of the emit and flags passes per multiprocessor (registers capped to
// match; one 1024-thread block fits otherwise): more of the state's loads in flight. 2 fits without spills, on
// the GPUs whose multiprocessors hold 2,048 threads (sm_80, sm_90, sm_100); the others hold fewer, so 0.
#ifndef SCHED_MINB
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 800 || __CUDA_ARCH__ == 900 || __CUDA_ARCH__ == 1000)
#define SCHED_MINB 2
#else
#define SCHED_MINB 0
#endif
#endif
#if SCHED_MINB > 0
#define SCHED_BOUNDS __launch_bounds__(SCHED_BLOCK, SCHED_MINB)
#else
#define SCHED_BOUNDS
#endif

// Pass 3: advance every active position through the window and write each epoch's active list in processing
// order: lists[w * list_stride + rank] = (edge id, head, tail, n_neg); then act[p] for the next window.
extern "C" __global__ void SCHED_BOUNDS win_emit(int* __restrict__ due, double* __restrict__ next_s,
                                                 double* __restrict__ next_neg, const double* __restrict__ eps,
                                                 double nsr, const int* __restrict__ edge_of,
                                                 const int* __restrict__ head_of, const int* __restrict__ tail_of,
                                                 int nnz, int t0, int W, const int* __restrict__ offsets,
                                                 int4* __restrict__ lists, i64 list_stride,
                                                 unsigned char* __restrict__ act) {
    __shared__ int warp_off[SCHED_WMAX][SCHED_BLOCK / 32];
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned bits = p < nnz ? act[p] : 0u;
    int nn[SCHED_WMAX];
    unsigned ballots[SCHED_WMAX];
    double nx = 0.0, nxn = 0.0, e = 0.0;
    bool moved = simulate(next_s, next_neg, eps, nsr, p, bits != 0u, t0, W, nn, nx, nxn, e);
    window_ballots(nn, W, ballots, warp_off, nullptr, true);
    if (p >= nnz) return;
    if (moved) {
        unsigned lane_lt = (1u << (threadIdx.x & 31u)) - 1u;
        int warp = threadIdx.x >> 5;
        int4 rec = make_int4(edge_of[p], head_of[p], tail_of[p], 0);
#pragma unroll
        for (int w = 0; w < SCHED_WMAX; ++w) {
            if (nn[w] >= 0) {
                int pos = offsets[w * gridDim.x + blockIdx.x] + warp_off[w][warp] + __popc(ballots[w] & lane_lt);
                rec.w = nn[w];
                lists[w * list_stride + pos] = rec;
            }
        }
        next_s[p] = nx;
        next_neg[p] = nxn;
        due[p] = (int)ceil(nx);
        act[p] = (unsigned char)activity(nx, e, t0 + W, W);
    } else {  // idle in this window (act[p] is 0): its bits for the next one, stored only where it is due there
        unsigned char next_bits = window_bits(due, next_s, eps, p, t0 + W, W);
        if (next_bits) act[p] = next_bits;
    }
}

// The vertex strategy's n_neg per edge and epoch (-1: inactive), written for a window and read every epoch: one
// byte where the host has bounded n_neg by 127 (VTX_NNEG_BYTES 1: n_neg < (1 + 1/min eps) negative_sample_rate + 1),
// else four.
#ifndef VTX_NNEG_BYTES
#define VTX_NNEG_BYTES 1
#endif
#if VTX_NNEG_BYTES == 1
typedef signed char nneg_t;
#else
typedef int nneg_t;
#endif

// Vertex strategy's schedule (state in graph order): nneg[w * nnz + e] = n_neg of edge e in epoch t0 + w,
// -1 when inactive; per-epoch block counts for the active totals; and act_tail[pos_tail[e]] = edge e's activity
// bits over the window (bit w: epoch t0 + w), in tail order, so that the vertex kernel reads a vertex's
// tail-side flags contiguously instead of gathering them from nneg (its tail items need no n_neg). A mirrored
// graph (every edge's reverse at the same place in tail order, with the same schedule) skips that scatter.
extern "C" __global__ void SCHED_BOUNDS win_flags(int* __restrict__ due, double* __restrict__ next_s,
                                                  double* __restrict__ next_neg, const double* __restrict__ eps,
                                                  double nsr, int nnz, int t0, int W, nneg_t* __restrict__ nneg,
                                                  int* __restrict__ counts, const int* __restrict__ pos_tail,
                                                  unsigned char* __restrict__ act_tail, int mirrored) {
    __shared__ int warp_off[SCHED_WMAX][SCHED_BLOCK / 32];
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    int nn[SCHED_WMAX];
    unsigned ballots[SCHED_WMAX];
    double nx = 0.0, nxn = 0.0, e = 0.0;
    bool moved = simulate(next_s, next_neg, eps, nsr, p, p < nnz && due[p] <= t0 + W - 1, t0, W, nn, nx, nxn, e);
    window_ballots(nn, W, ballots, warp_off, counts, false);
    if (p >= nnz) return;
    unsigned bits = 0u;
#pragma unroll
    for (int w = 0; w < SCHED_WMAX; ++w) {
        if (w < W) nneg[(i64)w * nnz + p] = (nneg_t)nn[w];
        if (nn[w] >= 0) bits |= 1u << w;
    }
    if (!mirrored) act_tail[pos_tail[p]] = (unsigned char)bits;  // a mirrored graph's kernel reads nneg instead
    if (moved) {
        next_s[p] = nx;
        next_neg[p] = nxn;
        due[p] = (int)ceil(nx);
    }
}

// ------------------------------------------------------------------------------------------ epoch status

// After an epoch: status[0] = its active count, status[1] = t + 1 if some coordinate of Y (n floats) is NaN or
// infinite. Every writer of status[1] writes the same stamp, and a stale stamp names an earlier epoch, so the word
// needs no clearing: an overflowed layout stays non-finite. One small launch, read back with the active count in
// one transfer (LayoutOptimizer's float32-overflow check costs no second round trip).
extern "C" __global__ void epoch_status(const float* __restrict__ Y, i64 n, const int* __restrict__ n_act,
                                        const int* __restrict__ ep, int* status) {
    i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i == 0) status[0] = *n_act;
    for (; i < n; i += (i64)gridDim.x * blockDim.x)
        if (!isfinite(Y[i])) {
            status[1] = epoch_t(ep) + 1;
            return;
        }
}
