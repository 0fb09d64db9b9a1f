// ------------------------------------------------------------------------------------------ one edge

// The attraction's gradient coefficient between rows x and y (as moves_cpu.attract_coef; 0 if they coincide).
__device__ __forceinline__ float attract_coef(const float* x, const float* y, const Curve& cv) {
    float d2 = 0.0f;
#pragma unroll
    for (int d = 0; d < DIM; ++d) {
        float diff = __fsub_rn(x[d], y[d]);
        d2 = __fadd_rn(d2, __fmul_rn(diff, diff));
    }
    if (!(d2 > 0.0f)) return 0.0f;
    float pb = power(d2, cv.b);
    return __fdiv_rn(__fdiv_rn(__fmul_rn(cv.c_att, pb), d2), __fadd_rn(__fmul_rn(cv.a, pb), 1.0f));
}

// Attraction of yi towards the tail row yj (as moves_cpu.attract): moves yi, writes the tail's move into tm.
__device__ __forceinline__ void attract(float* yi, const float* yj, const Curve& cv, float alpha, float* tm) {
    float coef = attract_coef(yi, yj, cv);
#pragma unroll
    for (int d = 0; d < DIM; ++d) {
        float g = clip4(__fmul_rn(coef, __fsub_rn(yi[d], yj[d])));
        float step = __fmul_rn(alpha, g);
        yi[d] = __fadd_rn(yi[d], step);
        tm[d] = -step;
    }
}

// A batch of up to B negative samples, starting at sample s0: drawn vertices and their rows.
// A slot holds k == i when it is to be skipped (the head itself, or past n_neg).
template <int B>
struct NegBatch {
    int k[B];
    float y[B][DIM];
};

template <int B, class Rows>
__device__ __forceinline__ void load_negatives(NegBatch<B>& nb, const Rows& rows, int i, u64 base, int s0, int nneg,
                                               const Curve& cv) {
#pragma unroll
    for (int q = 0; q < B; ++q) {
        int s = s0 + q;
        nb.k[q] = s < nneg ? negative_vertex(base, (u64)s, cv.n, cv.inv_n) : i;
        if (nb.k[q] != i) rows.row(nb.k[q], nb.y[q]);
    }
}

// One batch of negative samples (as moves_cpu.repel): each moves yi, computed from yfrom (yi itself when
// private_head, else the head's row before the edge).
template <int B>
__device__ __forceinline__ void repel_batch(float* yi, const float* yfrom, const NegBatch<B>& nb, int i,
                                            const Curve& cv, float alpha) {
#pragma unroll
    for (int q = 0; q < B; ++q) {
        if (nb.k[q] == i) continue;
        float d2 = 0.0f;
#pragma unroll
        for (int d = 0; d < DIM; ++d) {
            float diff = __fsub_rn(yfrom[d], nb.y[q][d]);
            d2 = __fadd_rn(d2, __fmul_rn(diff, diff));
        }
        if (d2 > 0.0f) {
            float pb = power(d2, cv.b);
            float coef = __fdiv_rn(cv.c_rep, __fmul_rn(__fadd_rn(0.001f, d2), __fadd_rn(__fmul_rn(cv.a, pb), 1.0f)));
#pragma unroll
            for (int d = 0; d < DIM; ++d)
                yi[d] = __fadd_rn(yi[d], __fmul_rn(alpha, clip4(__fmul_rn(coef, __fsub_rn(yfrom[d], nb.y[q][d])))));
        } else {
#pragma unroll
            for (int d = 0; d < DIM; ++d) yi[d] = __fadd_rn(yi[d], __fmul_rn(alpha, 4.0f));
        }
    }
}

// Attraction then all negatives of one head row yi (moved in place) against an edge whose tail row is yj;
// the first batch of B negative rows is loaded before the attraction is computed.
template <int B = NEG_BATCH, class Rows>
__device__ __forceinline__ void head_moves(float* yi, const float* yj, const Rows& rows, int i, int e, int nneg,
                                           u64 seed, int t, const Curve& cv, float alpha, float* tm) {
    u64 base = edge_hash_base(seed, (u64)t, (u64)e);
    NegBatch<B> nb;
    load_negatives(nb, rows, i, base, 0, nneg, cv);
#if !UMV_PH
    float yfrom[DIM];
#pragma unroll
    for (int d = 0; d < DIM; ++d) yfrom[d] = yi[d];
#endif
    attract(yi, yj, cv, alpha, tm);
    for (int s0 = 0;;) {
#if UMV_PH
        repel_batch(yi, yi, nb, i, cv, alpha);
#else
        repel_batch(yi, yfrom, nb, i, cv, alpha);
#endif
        s0 += B;
        if (s0 >= nneg) break;
        load_negatives(nb, rows, i, base, s0, nneg, cv);
    }
}

// All moves of one edge (as engine_cpu._edge): yi receives the head's new row (y0 its row before the edge), tm the
// tail's move.
template <int B = NEG_BATCH, class Rows>
__device__ __forceinline__ void edge_moves(const Rows& rows, int i, int j, int e, int nneg, u64 seed, int t,
                                           const Curve& cv, float alpha, float* y0, float* yi, float* tm) {
    float yj[DIM];
    rows.row(i, y0);
    rows.row(j, yj);
#pragma unroll
    for (int d = 0; d < DIM; ++d) yi[d] = y0[d];
    head_moves<B>(yi, yj, rows, i, e, nneg, seed, t, cv, alpha, tm);
}
