// Vertex (owner computes): a tile of lanes per vertex order[v] (busiest first); others' rows from the
// epoch-start snapshot S (as engine_cpu.epoch_vertex). The vertex's active items (edges as head, then as tail) are
// gathered a group at a time (32 items, or VTX_WIDE = 128 for the widest vertices) into a queue in shared memory
// (ballot + prefix count keeps their order); item q of a group is computed from the row as it stood at the
// group's start, and the group's moves (idle slots add 0) are summed in the fixed butterfly tree
// engine_cpu._fold_group follows: pairs at distance 16, then 8, 4, 2, 1 (64 and 32 first for a wide group).
// A hub's chain is thus one step per group of its active edges, not one per edge.
//
// Tiles: the first n_wide vertices of the order get four warps each (two per block), lane q of the four
// computing item q of a 128-wide group. The next ones up to n_heavy (the other hubs) get a whole warp, lane q
// computing item q. The rest share a warp, VTX_TILE lanes each: most vertices have a handful of active edges
// per epoch, which would leave most of a warp idle. Lane l of such a tile computes items l, l + VTX_TILE, ...
// of the group and adds them pairwise in the tree's first levels (distance 16, then 8, ... down to VTX_TILE)
// in registers, and the tile's shuffles do the remaining levels: the same tree, so the same bits.
#define VTX_WARPS 8  // warps per block
#define VTX_WIDE 128  // items per group of the widest vertices (four warps; vertex_index.VERTEX_WIDE_GROUP)
static_assert(VTX_WIDE == 128, "vertex_walk_wide folds the tree's levels 64 and 32 from shared memory");
#ifndef VTX_TILE
#define VTX_TILE 8  // lanes per ordinary vertex (1, 2, 4, 8, 16 or 32)
#endif
#define FULL_MASK 0xffffffffu
// The vertex kernel is bound by latency at low occupancy: a 2-D layout fits 4 blocks per
// multiprocessor (64 registers, no spills) when 4 negative rows are loaded together instead of 8; with 8, or
// in more dimensions, the cap would spill. VTX_MINB > 0: fit that many blocks (registers capped to match).
#ifndef VTX_NEG_BATCH
#define VTX_NEG_BATCH 4
#endif
#ifndef VTX_MINB
#define VTX_MINB (DIM <= 2 ? 4 : 0)
#endif
#if VTX_MINB > 0
#define VTX_BOUNDS __launch_bounds__(VTX_WARPS * 32, VTX_MINB)
#else
#define VTX_BOUNDS
#endif

// The move of item r of vertex i (r < hd: head edge h0 + r; else tail record t0 + r - hd), from its row yi.
__device__ __forceinline__ void vertex_item_move(int r, int i, i64 h0, i64 hd, i64 t0, const float* yi,
                                                 const PlainRows& rows, const int* __restrict__ tail,
                                                 const int* __restrict__ tail_head,
                                                 const nneg_t* __restrict__ nneg_of_edge, u64 seed, int t,
                                                 const Curve& cv, float alpha, float* mv) {
    float yo[DIM], tm[DIM];
    if (r < hd) {
        i64 e = h0 + r;
        float y[DIM];
        rows.row(tail[e], yo);
#pragma unroll
        for (int d = 0; d < DIM; ++d) y[d] = yi[d];
        head_moves<VTX_NEG_BATCH>(y, yo, rows, i, (int)e, nneg_of_edge[e], seed, t, cv, alpha, tm);
#pragma unroll
        for (int d = 0; d < DIM; ++d) mv[d] = __fsub_rn(y[d], yi[d]);
    } else {
        rows.row(tail_head[t0 + (r - hd)], yo);  // the edge's head
        float coef = attract_coef(yo, yi, cv);
#pragma unroll
        for (int d = 0; d < DIM; ++d) mv[d] = -__fmul_rn(alpha, clip4(__fmul_rn(coef, __fsub_rn(yo[d], yi[d]))));
    }
}

// Whether item r of a vertex's `total` items (r < hd: head edge h0 + r; else tail record t0 + r - hd) is active
// in epoch w of the window. On a mirrored graph (vertex_index.mirrored_edges) tail record k is the reverse of head edge
// h0 + k, active in the same epochs, so its activity is read there (no tail-order flags are written then).
__device__ __forceinline__ bool item_active(i64 r, i64 total, i64 h0, i64 hd, i64 t0,
                                            const nneg_t* __restrict__ nneg_of_edge,
                                            const unsigned char* __restrict__ act_tail, int w,
                                            int mirrored) {
    if (r >= total) return false;
    if (r < hd || mirrored) return nneg_of_edge[h0 + (r < hd ? r : r - hd)] >= 0;
    return (act_tail[t0 + (r - hd)] >> w) & 1u;
}

// All groups of vertex i, walked by a tile of TILE lanes (tl: this lane's place in it, tmask: its lanes;
// queue: the tile's 64 slots of shared memory). Lane 0 of the tile writes the new row.
template <int TILE>
__device__ __forceinline__ void vertex_walk(int i, int tl, unsigned tmask, int* queue, float* __restrict__ Y,
                                            const PlainRows& rows, const int* __restrict__ tail,
                                            const long long* __restrict__ head_ptr,
                                            const int* __restrict__ tail_head,
                                            const unsigned char* __restrict__ act_tail, int w, int mirrored,
                                            const long long* __restrict__ tail_ptr,
                                            const nneg_t* __restrict__ nneg_of_edge, u64 seed, int t, const Curve& cv,
                                            float alpha) {
    constexpr int R = 32 / TILE;  // items per lane and group
    int shift = (threadIdx.x & 31) & ~(TILE - 1);  // the tile's first lane in the warp
    float yi[DIM];
    rows.row(i, yi);
    i64 h0 = head_ptr[i], hd = head_ptr[i + 1] - h0;
    i64 t0 = tail_ptr[i], total = hd + (tail_ptr[i + 1] - t0);
    int queued = 0;
    for (i64 base = 0; base < total || queued > 0; base += 32) {
        if (base < total) {  // queue this window's active items, in order (all flags loaded first)
            bool act[R];
#pragma unroll
            for (int k = 0; k < R; ++k)
                act[k] = item_active(base + k * TILE + tl, total, h0, hd, t0, nneg_of_edge, act_tail, w, mirrored);
#pragma unroll
            for (int k = 0; k < R; ++k) {
                unsigned bits = __ballot_sync(tmask, act[k]) >> shift;
                if constexpr (TILE < 32) bits &= (1u << TILE) - 1u;
                if (act[k]) queue[queued + __popc(bits & ((1u << tl) - 1u))] = (int)(base + k * TILE + tl);
                queued += __popc(bits);
            }
            __syncwarp(tmask);
        }
        if (queued < 32 && base + 32 < total) continue;  // fill the group first
        int take = min(queued, 32);
        if (take == 0) break;  // no active item left (adding 0 could turn a -0 coordinate into +0)
        float mv[R][DIM];
#pragma unroll
        for (int k = 0; k < R; ++k) {
#pragma unroll
            for (int d = 0; d < DIM; ++d) mv[k][d] = 0.0f;
        }
#pragma unroll
        for (int k = 0; k < R; ++k)  // slots past the group's end stay 0
            if (k * TILE + tl < take)
                vertex_item_move(queue[k * TILE + tl], i, h0, hd, t0, yi, rows, tail, tail_head, nneg_of_edge, seed,
                                 t, cv, alpha, mv[k]);
#pragma unroll
        for (int s = R / 2; s > 0; s >>= 1) {  // tree levels at distance 16 .. TILE: item k + s onto item k
#pragma unroll
            for (int k = 0; k < s; ++k) {
#pragma unroll
                for (int d = 0; d < DIM; ++d) mv[k][d] = __fadd_rn(mv[k][d], mv[k + s][d]);
            }
        }
#pragma unroll
        for (int off = TILE / 2; off > 0; off >>= 1) {  // the levels below TILE, across the tile's lanes
#pragma unroll
            for (int d = 0; d < DIM; ++d) mv[0][d] = __fadd_rn(mv[0][d], __shfl_xor_sync(tmask, mv[0][d], off));
        }
#pragma unroll
        for (int d = 0; d < DIM; ++d) yi[d] = __fadd_rn(yi[d], mv[0][d]);
        __syncwarp(tmask);
        for (int q = tl; q < queued - take; q += TILE) queue[q] = queue[32 + q];
        queued -= take;
        __syncwarp(tmask);
    }
    if (tl == 0) store_row(Y, i, yi);
}

// Barrier of the four warps (128 threads) that walk one wide vertex: named barrier 1 or 2 (0 is __syncthreads).
// The ids are constants so that the kernel reserves three barriers, not all sixteen.
__device__ __forceinline__ void team_sync(int team) {
    if (team == 0)
        asm volatile("bar.sync 1, %0;" ::"n"(VTX_WIDE) : "memory");
    else
        asm volatile("bar.sync 2, %0;" ::"n"(VTX_WIDE) : "memory");
}

// All groups of wide vertex i, walked by the four warps of team `team` (tl: this thread's place among them);
// queue: VTX_WIDE * 2 slots, red: the group's VTX_WIDE moves, wcount: one count per warp. Every thread of the
// team folds the group's sum itself, so all hold the same row; thread 0 writes it.
__device__ __forceinline__ void vertex_walk_wide(int i, int team, int tl, int* queue, float (*red)[DIM],
                                                 int* wcount, float* __restrict__ Y, const PlainRows& rows,
                                                 const int* __restrict__ tail, const long long* __restrict__ head_ptr,
                                                 const int* __restrict__ tail_head,
                                                 const unsigned char* __restrict__ act_tail, int w, int mirrored,
                                                 const long long* __restrict__ tail_ptr,
                                                 const nneg_t* __restrict__ nneg_of_edge, u64 seed, int t,
                                                 const Curve& cv, float alpha) {
    int lane = tl & 31, warp = tl >> 5;
    float yi[DIM];
    rows.row(i, yi);
    i64 h0 = head_ptr[i], hd = head_ptr[i + 1] - h0;
    i64 t0 = tail_ptr[i], total = hd + (tail_ptr[i + 1] - t0);
    int queued = 0;
    for (i64 base = 0; base < total || queued > 0; base += VTX_WIDE) {
        if (base < total) {  // queue this window's active items, in order
            i64 r = base + tl;
            bool act = item_active(r, total, h0, hd, t0, nneg_of_edge, act_tail, w, mirrored);
            unsigned bits = __ballot_sync(FULL_MASK, act);
            if (lane == 0) wcount[warp] = __popc(bits);
            team_sync(team);
            int before = 0, found = 0;
#pragma unroll
            for (int k = 0; k < VTX_WIDE / 32; ++k) {
                int c = wcount[k];
                before += k < warp ? c : 0;
                found += c;
            }
            if (act) queue[queued + before + __popc(bits & ((1u << lane) - 1u))] = (int)r;
            queued += found;
            team_sync(team);  // the queue is complete; wcount may be rewritten
        }
        if (queued < VTX_WIDE && base + VTX_WIDE < total) continue;  // fill the group first
        int take = min(queued, VTX_WIDE);
        if (take == 0) break;  // no active item left (adding 0 could turn a -0 coordinate into +0)
        float mv[DIM];
#pragma unroll
        for (int d = 0; d < DIM; ++d) mv[d] = 0.0f;
        if (tl < take)
            vertex_item_move(queue[tl], i, h0, hd, t0, yi, rows, tail, tail_head, nneg_of_edge, seed, t, cv, alpha,
                             mv);
#pragma unroll
        for (int d = 0; d < DIM; ++d) red[tl][d] = mv[d];
        team_sync(team);
        float s[DIM];
#pragma unroll
        for (int d = 0; d < DIM; ++d) {  // levels 64 and 32 of the tree from shared memory, then the warp's
            float lo = __fadd_rn(red[lane][d], red[lane + 64][d]);
            float hi = __fadd_rn(red[lane + 32][d], red[lane + 96][d]);
            s[d] = __fadd_rn(lo, hi);
        }
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
#pragma unroll
            for (int d = 0; d < DIM; ++d) s[d] = __fadd_rn(s[d], __shfl_xor_sync(FULL_MASK, s[d], off));
        }
#pragma unroll
        for (int d = 0; d < DIM; ++d) yi[d] = __fadd_rn(yi[d], s[d]);
        if (tl < queued - take) queue[tl] = queue[VTX_WIDE + tl];  // the rest (fewer than VTX_WIDE) moves up
        queued -= take;
        team_sync(team);  // every read of the queue and of red is done before the next group writes them
    }
    if (tl == 0) store_row(Y, i, yi);
}

// Blocks [0, wide_blocks) take the first n_wide vertices of the order, four warps each; the next heavy_blocks
// take the vertices up to n_heavy, a warp each; the blocks after them take the rest, VTX_TILE lanes each.
extern "C" __global__ void VTX_BOUNDS epoch_vertex(float* __restrict__ Y, const float* __restrict__ S,
                                                   const int* __restrict__ order, int n_wide, int wide_blocks,
                                                   int n_heavy, int heavy_blocks, const int* __restrict__ tail,
                                                   const long long* __restrict__ head_ptr,
                                                   const int* __restrict__ tail_head,
                                                   const unsigned char* __restrict__ act_tail, int w, int mirrored,
                                                   const long long* __restrict__ tail_ptr,
                                                   const nneg_t* __restrict__ nneg_of_edge, const int* __restrict__ ep,
                                                   u64 seed, int n, float a, float b, float c_att, float c_rep) {
    constexpr int TEAMS = VTX_WARPS * 32 / VTX_WIDE;  // wide vertices per block
    __shared__ int queue_all[VTX_WARPS * 32 / VTX_TILE][2 * 32];
    __shared__ int wide_queue[TEAMS][2 * VTX_WIDE];
    __shared__ float wide_red[TEAMS][VTX_WIDE][DIM];
    __shared__ int wide_count[TEAMS][VTX_WIDE / 32];
    load_pow_tables();
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    Curve cv = make_curve(a, b, c_att, c_rep, n);
    PlainRows rows = {S};
    int t = epoch_t(ep);
    float alpha = epoch_alpha(ep);
    int block = blockIdx.x;
    if (block < wide_blocks) {
        int team = threadIdx.x / VTX_WIDE;
        int v = block * TEAMS + team;
        if (v >= n_wide) return;  // the whole team leaves together
        vertex_walk_wide(order[v], team, threadIdx.x % VTX_WIDE, wide_queue[team], wide_red[team], wide_count[team],
                         Y, rows, tail, head_ptr, tail_head, act_tail, w, mirrored, tail_ptr, nneg_of_edge, seed, t, cv,
                         alpha);
        return;
    }
    block -= wide_blocks;
    if (block < heavy_blocks) {
        int v = n_wide + block * VTX_WARPS + warp;
        if (v >= n_heavy) return;  // the whole warp leaves together
        vertex_walk<32>(order[v], lane, FULL_MASK, queue_all[warp * (32 / VTX_TILE)], Y, rows, tail, head_ptr,
                        tail_head, act_tail, w, mirrored, tail_ptr, nneg_of_edge, seed, t, cv, alpha);
    } else {
        int tile = warp * (32 / VTX_TILE) + lane / VTX_TILE;  // the tile's place in the block
        int v = n_heavy + (block - heavy_blocks) * (VTX_WARPS * 32 / VTX_TILE) + tile;
        if (v >= n) return;  // the whole tile leaves together
        unsigned tmask = VTX_TILE == 32 ? FULL_MASK : ((1u << VTX_TILE) - 1u) << (lane & ~(VTX_TILE - 1));
        vertex_walk<VTX_TILE>(order[v], lane & (VTX_TILE - 1), tmask, queue_all[tile], Y, rows, tail, head_ptr,
                              tail_head, act_tail, w, mirrored, tail_ptr, nneg_of_edge, seed, t, cv, alpha);
    }
}
