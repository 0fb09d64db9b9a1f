// The sparse matrix-vector product of the spectral init's GPU eigen-solve (umapviz/graph/spectral_gpu.py).
//
// y[i] = row_scale[i] * sum_j w[i, j] * x[j] over row i of a CSR matrix, in float64. One warp per row: lane l
// adds the row's entries l, l + 32, ... in order, then a fixed butterfly adds the lanes, so every run gives
// the same bytes (cuSPARSE's default CSR algorithm does not promise that, and the init must repeat exactly).

typedef long long i64;

extern "C" __global__ void csr_matvec(const i64* __restrict__ indptr, const int* __restrict__ indices,
                                      const float* __restrict__ weight, const double* __restrict__ x,
                                      const double* __restrict__ row_scale, double* __restrict__ y, int n_rows) {
    i64 row = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (row >= n_rows) return;  // the whole warp leaves together: all its lanes share the row
    double sum = 0.0;
    for (i64 p = indptr[row] + lane; p < indptr[row + 1]; p += 32) sum += (double)weight[p] * x[indices[p]];
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0) y[row] = row_scale[row] * sum;
}
