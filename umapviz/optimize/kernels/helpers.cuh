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
