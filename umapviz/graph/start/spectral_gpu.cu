// The spectral init's eigen-solve primitives on the GPU (umapviz/graph/spectral_gpu.py); each kernel has a twin
// in umapviz/graph/spectral_cpu.py that takes the same float64 operations in the same order, so both devices
// give the same bytes: change both together. Compiled with --fmad=false (no fused multiply-adds, which the
// CPU's Numba does not make either).

typedef long long i64;

// y[i] = row_scale[i] * sum_j w[i, j] * x[j] over row i of a CSR matrix, in float64: one thread per row adds the
// row's entries in order (the CPU twin's order; a kNN graph's rows are short). Twin of spectral_cpu.csr_matvec.
extern "C" __global__ void csr_matvec(const i64* __restrict__ indptr, const int* __restrict__ indices,
                                      const float* __restrict__ weight, const double* __restrict__ x,
                                      const double* __restrict__ row_scale, double* __restrict__ y, int n_rows) {
    i64 row = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n_rows) return;
    double sum = 0.0;
    for (i64 p = indptr[row]; p < indptr[row + 1]; ++p) sum += (double)weight[p] * x[indices[p]];
    y[row] = row_scale[row] * sum;
}

// ---- The batched eigen-solve's per-component reductions (several connected components solved at once).
//
// Rows are grouped by component (component c owns rows bounds[c] .. bounds[c+1] - 1) and cut into tiles that
// never straddle two components. Vectors are stored one after another: vector j of V is V[j * n .. j * n + n).
// Every sum is taken in a fixed order, so each run gives the same bytes.

#define SEG_THREADS 256  // = SEG_THREADS in spectral_cpu.py

// A fixed-order sum of one value per thread of the block (a butterfly per warp, then the warps in order).
// Twin of spectral_cpu._butterfly and the warp loop of spectral_cpu.seg_dot_tiles.
__device__ __forceinline__ double block_sum(double v, double* warp_sums) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    int warp = threadIdx.x >> 5;
    if ((threadIdx.x & 31) == 0) warp_sums[warp] = v;
    __syncthreads();
    double total = 0.0;
    if (threadIdx.x == 0)
        for (int w = 0; w < SEG_THREADS / 32; ++w) total += warp_sums[w];
    return total;  // valid in thread 0 only
}

// partial[col * n_tiles + tile] = sum over the tile's rows r of V[col][r] * x[r]; grid (n_tiles, n_cols).
// Twin of spectral_cpu.seg_dot_tiles.
extern "C" __global__ void __launch_bounds__(SEG_THREADS) seg_dot_tiles(const double* __restrict__ V, i64 n,
                                                                       const double* __restrict__ x,
                                                                       const int* __restrict__ tile_lo,
                                                                       int n_tiles, double* __restrict__ partial) {
    __shared__ double warp_sums[SEG_THREADS / 32];
    int tile = blockIdx.x, col = blockIdx.y;
    const double* v = V + (i64)col * n;
    double sum = 0.0;
    for (int r = tile_lo[tile] + threadIdx.x; r < tile_lo[tile + 1]; r += SEG_THREADS) sum += v[r] * x[r];
    double total = block_sum(sum, warp_sums);
    if (threadIdx.x == 0) partial[(i64)col * n_tiles + tile] = total;
}

// out[c * n_cols + col] = the sum of component c's tiles (comp_tiles[c] .. comp_tiles[c+1] - 1) in order.
// Twin of spectral_cpu.seg_dot_finish.
extern "C" __global__ void seg_dot_finish(const double* __restrict__ partial, int n_tiles,
                                          const int* __restrict__ comp_tiles, int n_comp, int n_cols,
                                          double* __restrict__ out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_comp * n_cols) return;
    int c = i / n_cols, col = i % n_cols;
    double sum = 0.0;
    for (int t = comp_tiles[c]; t < comp_tiles[c + 1]; ++t) sum += partial[(i64)col * n_tiles + t];
    out[i] = sum;
}

// out[r] = add[r] + sign * sum_j V[j][r] * coef[comp_of[r] * n_cols + j], j = 0 .. n_cols - 1 in order
// (out may be add: each thread reads its row before writing it). Twin of spectral_cpu.seg_combine.
extern "C" __global__ void seg_combine(const double* __restrict__ V, i64 n, int n_cols, const double* __restrict__ coef,
                                       const int* __restrict__ comp_of, const double* add, double sign, double* out) {
    i64 r = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;
    const double* c = coef + (i64)comp_of[r] * n_cols;
    double sum = 0.0;
    for (int j = 0; j < n_cols; ++j) sum += V[(i64)j * n + r] * c[j];
    out[r] = add[r] + sign * sum;
}
