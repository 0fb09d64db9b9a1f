// GPU kernels for the fuzzy set's per-point steps (umapviz/graph/fuzzy_gpu.py).

typedef long long i64;

// Fuzzy set, per point: (sigma, rho) by bisection, as umapviz/graph/fuzzy_cpu.py's _smooth_knn_dist.
extern "C" __global__ void smooth_knn_dist(const float* __restrict__ dists, int n, int k, double target,
                                           double global_mean, float* __restrict__ sigma_out,
                                           float* __restrict__ rho_out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float* row = dists + (i64)i * k;
    float rho = 0.0f;
    for (int j = 0; j < k; ++j) {
        if (row[j] > 0.0f) {
            rho = row[j];
            break;
        }
    }
    const double INF = __longlong_as_double(0x7ff0000000000000LL);
    double lo = 0.0, hi = INF, mid = 1.0;
    for (int step = 0; step < 64; ++step) {
        double total = 0.0;
        for (int j = 1; j < k; ++j) {
            float gap = __fsub_rn(row[j], rho);
            total = __dadd_rn(total, gap > 0.0f ? exp(-__ddiv_rn((double)gap, mid)) : 1.0);
        }
        if (fabs(__dsub_rn(total, target)) < 1e-5) break;
        if (total > target) {
            hi = mid;
            mid = __ddiv_rn(__dadd_rn(lo, hi), 2.0);
        } else {
            lo = mid;
            mid = hi == INF ? __dmul_rn(mid, 2.0) : __ddiv_rn(__dadd_rn(lo, hi), 2.0);
        }
    }
    float sigma = (float)mid;
    double mean_row = 0.0;
    for (int j = 0; j < k; ++j) mean_row = __dadd_rn(mean_row, (double)row[j]);
    mean_row = __ddiv_rn(mean_row, (double)k);
    double ref = rho > 0.0f ? mean_row : global_mean;
    if ((double)sigma < __dmul_rn(1e-3, ref)) sigma = (float)__dmul_rn(1e-3, ref);
    sigma_out[i] = sigma;
    rho_out[i] = rho;
}

// Directed membership strengths (n * k), 0 for self and missing neighbours, as fuzzy_cpu.py's _memberships.
// exp is taken in float64 and rounded once: the host's float32 exp is (nearly always) correctly rounded,
// and so is this.
extern "C" __global__ void memberships(const int* __restrict__ indices, const float* __restrict__ dists,
                                       const float* __restrict__ sigma, const float* __restrict__ rho, int n, int k,
                                       float* __restrict__ vals) {
    i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (i64)n * k) return;
    int i = (int)(idx / k);
    int nb = indices[idx];
    float v = 0.0f;
    if (nb >= 0 && nb != i) {
        float gap = __fsub_rn(dists[idx], rho[i]);
        if (gap <= 0.0f || sigma[i] == 0.0f) {
            v = 1.0f;
        } else {
            v = (float)exp(-(double)__fdiv_rn(gap, sigma[i]));
        }
    }
    vals[idx] = v;
}
