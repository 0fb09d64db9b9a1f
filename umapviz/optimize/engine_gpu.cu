// GPU kernels of the layout optimizer: one epoch of every strategy, as docs/optimizer.md states them.
//
// They mirror umapviz/optimize/engine_cpu.py (and moves_cpu.py) operation for operation: the same float32
// formulas in the same order, float64 for the schedule and the fixed-point conversions, and the same
// counter-based hash, so that the two devices give the same bytes. Every operation of the moves is correctly
// rounded: IEEE +, -, *, / (written __fadd_rn, __fmul_rn, __dmul_rn, ..., which are never contracted into an
// FMA; the build adds --fmad=false too, and no fast-math), and the power d2**b is pow_portable below, built
// from those with bit moves and tables of constants, where a library powf (CUDA's, the C library's) would
// differ between the devices in the last bit on a few percent of calls, and a chaotic iteration of many epochs
// would turn that into another picture.
//
// Compile-time parameters (set by engine_gpu.py; the defaults serve the CI compile check):
//   UMV_DIM  embedding dimension (1..8), UMV_PH  private_head (1: negatives see the head after its
//   attraction; 0: they see it as it was before the edge), VTX_NNEG_BYTES  bytes of the vertex strategy's
//   per-epoch n_neg, UMV_LIBRARY_POW  benchmark only (bench/gpu_bench.py --library-pow): 1 takes CUDA's powf
//   instead of pow_portable, to measure what the portable one costs; it breaks the agreement with the CPU.
//   Every other macro below is a tuned constant, defined here with its reason.
//
// Per-edge schedule state is stored in *processing order*: position p holds edge order[p] (order = the
// seed's permutation, or the identity for the vertex strategy), so the schedule pass reads it coalesced.
// The schedule runs for a window of up to 8 epochs per pass; each epoch's active list is one int4 per
// active edge, in processing order: (edge id, head, tail, n_neg).
//
// Epoch number t and learning rate alpha come from a device word pair `ep` (t, bits of alpha), so that the
// window's epochs share one schedule pass without a host round trip.

#ifndef UMV_DIM
#define UMV_DIM 2
#endif
#ifndef UMV_PH
#define UMV_PH 1
#endif
#ifndef UMV_LIBRARY_POW
#define UMV_LIBRARY_POW 0
#endif
#define DIM UMV_DIM
#define SCHED_BLOCK 1024  // threads (= processing positions) per block of the schedule kernels

typedef unsigned long long u64;
typedef long long i64;

// ------------------------------------------------------------------------------------------ small helpers

__device__ __forceinline__ float clip4(float x) {
    // Same branches as moves_cpu.clip (NaN passes through unchanged).
    if (x > 4.0f) return 4.0f;
    if (x < -4.0f) return -4.0f;
    return x;
}

#ifdef __CUDACC__
// pow_portable reads its tables from a copy in the block's shared memory, which every kernel that calls power()
// fills first (load_pow_tables). The persistent kernels' grid barrier ends in an acquire, which invalidates the
// multiprocessor's L1 cache: tables read from global memory would come back from L2 after every barrier, and a
// chunk pays each of those round trips on its critical path (one edge's chain of about six powers).
__shared__ double UMV_POW_INVC_SHARED[32];
__shared__ double UMV_POW_LOGC_SHARED[32];
__shared__ unsigned long long UMV_POW_EXP2_BITS_SHARED[32];
#define UMV_POW_TABLE(name) name##_SHARED
#endif

// ---- pow_portable (tests compile this section as host code too: keep it free of other device functions)
#ifndef UMV_POW_TABLE  // compiled as host code: the tables below
#define UMV_POW_TABLE(name) name
#endif
// pow_portable's tables (the same literals as moves_cpu.py's _POW_INVC, _POW_LOGC, _POW_EXP2_BITS): for x's mantissa
// z in the i-th of 32 subintervals of [0.699, 1.398), 1/c_i (29 significant bits) and 32 log2(c_i); and the bits
// of 2^(j/32) less j << 47, j = 0..31.
__device__ const double UMV_POW_INVC[32] = {
    1.4143646992743015, 1.3837838396430016, 1.3544974103569984, 1.3264249227941036, 1.2994924373924732,
    1.273631889373064, 1.248780533671379, 1.224880427122116, 1.2018779776990414, 1.1797235421836376,
    1.1583710797131062, 1.13777781650424, 1.1179039664566517, 1.098712481558323, 1.0801688097417355,
    1.0622406974434853, 1.0448979921638966, 1.028112482279539, 1.0118577368557453, 0.9903288781642914,
    0.9624060709029436, 0.9343066215515137, 0.9078014679253101, 0.8827586676925421, 0.8590604458004236,
    0.8366013485938311, 0.8152866642922163, 0.7950310930609703, 0.7757576107978821, 0.7573964837938547,
    0.7398844249546528, 0.7231638729572296};
__device__ const double UMV_POW_LOGC[32] = {
    -16.0049335192545, -14.99579512707123, -14.008244328827326, -13.041376628690792, -12.094343610757853,
    -11.166347643081, -10.256638511467145, -9.36450944486811, -8.489293820870499, -7.630362122384831,
    -6.787119653364287, -5.959003452411898, -5.145480281043314, -4.346044850382529, -3.5602174615024356,
    -2.787542698462894, -2.0275874090676007, -1.279939632314883, -0.5442069486938658, 0.44865234403846527,
    1.7690352561991047, 3.137024074997164, 4.465640760171579, 5.757088422335314, 7.013390337726093,
    8.236408681348523, 9.42786169449549, 10.589337941822972, 11.722308770576511, 12.828139883130182,
    13.908101294482217, 14.96337561410656};
__device__ const unsigned long long UMV_POW_EXP2_BITS[32] = {
    0x3FF0000000000000ULL, 0x3FEFD9B0D3158574ULL, 0x3FEFB5586CF9890FULL, 0x3FEF9301D0125B51ULL,
    0x3FEF72B83C7D517BULL, 0x3FEF54873168B9AAULL, 0x3FEF387A6E756238ULL, 0x3FEF1E9DF51FDEE1ULL,
    0x3FEF06FE0A31B715ULL, 0x3FEEF1A7373AA9CBULL, 0x3FEEDEA64C123422ULL, 0x3FEECE086061892DULL,
    0x3FEEBFDAD5362A27ULL, 0x3FEEB42B569D4F82ULL, 0x3FEEAB07DD485429ULL, 0x3FEEA47EB03A5585ULL,
    0x3FEEA09E667F3BCDULL, 0x3FEE9F75E8EC5F74ULL, 0x3FEEA11473EB0187ULL, 0x3FEEA589994CCE13ULL,
    0x3FEEACE5422AA0DBULL, 0x3FEEB737B0CDC5E5ULL, 0x3FEEC49182A3F090ULL, 0x3FEED503B23E255DULL,
    0x3FEEE89F995AD3ADULL, 0x3FEEFF76F2FB5E47ULL, 0x3FEF199BDD85529CULL, 0x3FEF3720DCEF9069ULL,
    0x3FEF5818DCFBA487ULL, 0x3FEF7C97337B9B5FULL, 0x3FEFA4AFA2A490DAULL, 0x3FEFD0765B6E4540ULL};

// x**y for float x >= 0 and y, from double IEEE +, -, * only (no library call). Twin of pow_portable in
// moves_cpu.py: change both together, step for step, tables included (that docstring gives the steps, the
// accuracy and the special cases: no subnormal operand or result, x or x**y below 2^-126 gives 0). Bit moves
// and integer operations are exact; every float operation is an explicitly rounded intrinsic, never contracted.
// The twin's values, computed without a branch: the special cases of x and of u are computed beside the main
// steps and selected at the end, and z = (double)float(ix - top) is rebuilt from the float's bits (exact, as the
// conversion), so the compiler overlaps the tests and the table lookups with the chain of float64 operations,
// which a chunk waits for about six times in a row.
__device__ __forceinline__ float pow_portable(float x, float y) {
    int ix = __float_as_int(x);
    bool normal = ix >= 0x00800000 && ix < 0x7f800000;  // a positive normal float
    float special = ix >= 0x7f800000 ? x : ((ix & 0x7fffffff) < 0x00800000 ? 0.0f : __int_as_float(0x7fc00000));
    int tmp = ix - 0x3f330000;
    int i = (tmp >> 18) & 31;
    int top = tmp & -8388608;  // the exponent part of tmp, k: a multiple of 2^23
    // z = (double)float(ix - top), from its bits: a normal float's exponent rebiased and mantissa shifted (exact;
    // ix - top lies in [0x3f330000, 0x3fb30000) whatever ix is, so z is in range even where x is special)
    double z = __longlong_as_double(((long long)(ix - top) << 29) + 0x3800000000000000LL);
    double r = __dsub_rn(__dmul_rn(z, UMV_POW_TABLE(UMV_POW_INVC)[i]), 1.0);
    double y0 = __dadd_rn(UMV_POW_TABLE(UMV_POW_LOGC)[i], (double)(top >> 18));  // 32 (log2 c_i + k)
    double r2 = __dmul_rn(r, r);
    double r4 = __dmul_rn(r2, r2);
    double lg = __dadd_rn(
        __dadd_rn(__dadd_rn(y0, __dmul_rn(46.16624130845782, r)),
                  __dmul_rn(r2, __dadd_rn(-23.083120484692593, __dmul_rn(15.388746740952461, r)))),
        __dmul_rn(r4, __dadd_rn(-11.543983276749524, __dmul_rn(9.236125963385836, r))));
    double u = __dmul_rn((double)y, lg);
    bool in_range = u >= -4032.0 && u < 4096.0;  // else x**y below 2^-126, from 2^128, or NaN
    float out_of_range = u < -4032.0 ? 0.0f : (u >= 4096.0 ? __int_as_float(0x7f800000) : __int_as_float(0x7fc00000));
    double kd = __dadd_rn(u, 6755399441055744.0);  // 1.5 * 2^52: the last bits of kd are v = round(u), ties to even
    unsigned long long ki = (unsigned long long)__double_as_longlong(kd);
    double s = __dsub_rn(u, __dsub_rn(kd, 6755399441055744.0));
    double s2 = __dmul_rn(s, s);
    double e = __dadd_rn(__dadd_rn(1.0, __dmul_rn(0.0216608493917244, s)),
                         __dmul_rn(s2, __dadd_rn(__dadd_rn(0.0002345961982143423, __dmul_rn(1.693863379857484e-06, s)),
                                                 __dmul_rn(s2, 9.172536954829184e-09))));
    double scale = __longlong_as_double((long long)(UMV_POW_TABLE(UMV_POW_EXP2_BITS)[ki & 31] + (ki << 47)));
    float p = __double2float_rn(__dmul_rn(e, scale));
    return normal ? (in_range ? p : out_of_range) : special;
}
// ---- end of pow_portable

// The moves' d2**b (as moves_cpu.power).
__device__ __forceinline__ float power(float x, float y) {
#if UMV_LIBRARY_POW
    return powf(x, y);
#else
    return pow_portable(x, y);
#endif
}

// Fills the block's copy of pow_portable's tables. Every kernel that calls power() calls this first, with all
// of its threads, before any of them returns.
__device__ __forceinline__ void load_pow_tables() {
    for (int k = threadIdx.x; k < 32; k += blockDim.x) {
        UMV_POW_INVC_SHARED[k] = UMV_POW_INVC[k];
        UMV_POW_LOGC_SHARED[k] = UMV_POW_LOGC[k];
        UMV_POW_EXP2_BITS_SHARED[k] = UMV_POW_EXP2_BITS[k];
    }
    __syncthreads();
}

__device__ __forceinline__ u64 mix64(u64 z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// hash(seed, t, e, s) = mix(mix(mix(seed ^ t*C1) ^ e*C2) ^ s*C3); the first two levels are per edge.
__device__ __forceinline__ u64 edge_hash_base(u64 seed, u64 t, u64 e) {
    return mix64(mix64(seed ^ (t * 0x9E3779B97F4A7C15ULL)) ^ (e * 0xD1B54A32D192ED03ULL));
}

// h % n, exactly, without the generic 64-bit division: q = trunc(h * (1/n)) in float64 is off from
// floor(h / n) by less than 1 when n > 2^16 (relative error <= 3 * 2^-53 on a quotient < 2^64 / n), so one
// correction step lands the remainder in [0, n).
__device__ __forceinline__ u64 mod_n(u64 h, u64 n, double inv_n) {
    if (n <= 65536ULL) return h % n;
    u64 q = (u64)__dmul_rz(__ull2double_rn(h), inv_n);
    i64 r = (i64)(h - q * n);
    if (r < 0) r += (i64)n;
    else if (r >= (i64)n) r -= (i64)n;
    return (u64)r;
}

__device__ __forceinline__ int negative_vertex(u64 base, u64 s, u64 n, double inv_n) {
    return (int)mod_n(mix64(base ^ (s * 0x8CB92BA72F3D8DD7ULL)), n, inv_n);
}

// fix(x) = int64(rint(float64(x) * 2**32)): round half to even, as np.rint.
__device__ __forceinline__ u64 to_fixed(float x) {
    return (u64)__double2ll_rn(__dmul_rn((double)x, 4294967296.0));
}

// float32(float64(y) + float64(acc) * 2**-32)
__device__ __forceinline__ float apply_fixed(float y, u64 acc) {
    return __double2float_rn(__dadd_rn((double)y, __dmul_rn(__ll2double_rn((i64)acc), 2.3283064365386963e-10)));
}

__device__ __forceinline__ int epoch_t(const int* ep) { return ep[0]; }
__device__ __forceinline__ float epoch_alpha(const int* ep) { return __int_as_float(ep[1]); }

// L2 eviction hints: 1 reads the active lists as streaming data (evict first) where they are read for the last
// time; 2 also makes the persistent kernels' 2-D row reads keep the embedding in L2 (evict last) against the
// accumulators and active lists that share it; 3 also adds into the accumulators with evict-first hints. 2 is
// used: once a graph's embedding and lists no longer fit in L2 together, keeping the embedding there saves
// the row reads that bound the kernels, and 3 costs more than it saves. The bytes are the same at every level.
#ifndef L2_HINTS
#define L2_HINTS 2
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800 && L2_HINTS > 1  // the hints' PTX needs Ampere (sm_80); a T4 does
#undef L2_HINTS                                                     // without them
#define L2_HINTS 1
#endif

__device__ __forceinline__ int4 load_last(const int4* p) {  // an active record read for the last time
#if L2_HINTS >= 1
    return __ldcs(p);
#else
    return *p;
#endif
}

// Fixed-point sums are order-free: an atomic add whose result is not used (a reduction).
__device__ __forceinline__ void acc_add(u64* p, u64 v) {
#if L2_HINTS >= 3
    u64 pol;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    asm volatile("red.global.add.L2::cache_hint.u64 [%0], %1, %2;" ::"l"(p), "l"(v), "l"(pol) : "memory");
#else
    atomicAdd(p, v);
#endif
}

// Row readers: plain loads, loads that skip L1 (inside the persistent kernels, whose other blocks rewrite
// rows between grid barriers; L1 is not coherent across multiprocessors). 2-D rows are read as one 8-byte load.
struct PlainRows {
    const float* Y;
    __device__ __forceinline__ void row(int v, float* out) const {
#if DIM == 2
        float2 r = *reinterpret_cast<const float2*>(Y + (i64)v * 2);
        out[0] = r.x;
        out[1] = r.y;
#else
#pragma unroll
        for (int d = 0; d < DIM; ++d) out[d] = Y[(i64)v * DIM + d];
#endif
    }
};
struct L2Rows {
    const float* Y;
    __device__ __forceinline__ void row(int v, float* out) const {
#if DIM == 2 && L2_HINTS >= 2
        u64 pol;
        asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
        asm volatile("ld.global.cg.L2::cache_hint.v2.f32 {%0, %1}, [%2], %3;"
                     : "=f"(out[0]), "=f"(out[1])
                     : "l"(Y + (i64)v * 2), "l"(pol)
                     : "memory");
#elif DIM == 2
        float2 r = __ldcg(reinterpret_cast<const float2*>(Y + (i64)v * 2));
        out[0] = r.x;
        out[1] = r.y;
#else
#pragma unroll
        for (int d = 0; d < DIM; ++d) out[d] = __ldcg(Y + (i64)v * DIM + d);
#endif
    }
};

// Row writers: a 2-D row is stored as one 8-byte store and a move is added to it by one vector atomic (Hopper,
// sm_90, adds float2 atomically in global memory): one L2 request per row instead of one per coordinate. The
// layout kernels are bound by such requests. 2-D rows are 8-byte aligned because CuPy's
// allocations are. Other dimensions keep one access per coordinate.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define UMV_VECTOR_ATOMICS 1
#else
#define UMV_VECTOR_ATOMICS 0
#endif

__device__ __forceinline__ void store_row(float* Y, int v, const float* y) {
#if DIM == 2
    *reinterpret_cast<float2*>(Y + (i64)v * 2) = make_float2(y[0], y[1]);
#else
#pragma unroll
    for (int d = 0; d < DIM; ++d) Y[(i64)v * DIM + d] = y[d];
#endif
}

__device__ __forceinline__ void atomic_add_row(float* Y, int v, const float* m) {
#if UMV_VECTOR_ATOMICS && DIM == 2
    atomicAdd(reinterpret_cast<float2*>(Y + (i64)v * 2), make_float2(m[0], m[1]));
#else
#pragma unroll
    for (int d = 0; d < DIM; ++d) atomicAdd(Y + (i64)v * DIM + d, m[d]);
#endif
}

struct Curve {
    float a, b, c_att, c_rep;
    u64 n;         // number of vertices (negative samples are drawn from [0, n))
    double inv_n;  // 1 / n, for mod_n
};

__device__ __forceinline__ Curve make_curve(float a, float b, float c_att, float c_rep, int n) {
    Curve cv = {a, b, c_att, c_rep, (u64)n, __drcp_rn((double)n)};
    return cv;
}

// Negative samples whose rows are loaded together, before any of them is used: the loads do not depend on
// the head's moving row, so one memory round trip serves a batch instead of one per sample.
#ifndef NEG_BATCH
#define NEG_BATCH (DIM <= 4 ? 8 : 4)
#endif

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
