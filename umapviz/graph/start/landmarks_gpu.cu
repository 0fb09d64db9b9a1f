// The landmark assignment's step on the GPU (umapviz/graph/landmarks_gpu.py); twin of
// umapviz/graph/landmarks_cpu.py's grow_owners: change both together. Integer and float comparisons only, so
// both devices label the same rows the same way.

typedef long long i64;

// One step: each row without an owner (level -1) takes the owner of its heaviest neighbour labelled before
// `step` (ties of weight: the smaller owner) and gets level `step`. A thread reads only levels below `step` and
// writes only its own row, which no other thread reads in this step, so the result does not depend on the order
// in which threads run. `count` receives the number of rows labelled.
extern "C" __global__ void grow_owners(const i64* __restrict__ indptr, const int* __restrict__ indices,
                                       const float* __restrict__ weight, int* __restrict__ level,
                                       int* __restrict__ owner, int step, int n_rows,
                                       unsigned long long* __restrict__ count) {
    i64 row = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n_rows || level[row] >= 0) return;
    int best = -1;
    float best_w = -1.0f;
    for (i64 p = indptr[row]; p < indptr[row + 1]; ++p) {
        int j = indices[p];
        int lj = level[j];
        if (lj < 0 || lj >= step) continue;
        float w = weight[p];
        if (w > best_w || (w == best_w && owner[j] < best)) {
            best = owner[j];
            best_w = w;
        }
    }
    if (best >= 0) {
        owner[row] = best;
        level[row] = step;
        atomicAdd(count, 1ULL);
    }
}
