// Connected components on the GPU (umapviz/graph/components_gpu.py); twin of umapviz/graph/components_cpu.py's
// union-find: both end with each vertex pointing at the lowest vertex of its component.
//
// parent[x] <= x and parent[x] in x's component hold throughout: hooking only lowers a value to that of a vertex
// joined to it by an edge, and jumping replaces a parent by its own parent. When a hooking pass changes nothing
// after a complete jumping, both ends of every edge have one root, which is below every vertex of its component:
// the component's lowest vertex. Atomic minima and racing reads change how fast that is reached, not where.

// Each edge (u, v): the higher of the two ends' parents is hooked under the lower (an atomic minimum); `changed`
// is set where a value was lowered.
extern "C" __global__ void hook(const int* __restrict__ head, const int* __restrict__ tail, int* parent,
                                long long n_edges, int* __restrict__ changed) {
    long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n_edges) return;
    int pu = parent[head[e]], pv = parent[tail[e]];
    if (pu == pv) return;
    int low = pu < pv ? pu : pv, high = pu < pv ? pv : pu;
    if (atomicMin(parent + high, low) > low) *changed = 1;
}

// Pointer jumping: each vertex's parent becomes its parent's parent; `changed` is set where one moved.
extern "C" __global__ void jump(int* parent, int n, int* __restrict__ changed) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= n) return;
    int p = parent[x], up = parent[p];
    if (up < p) {
        parent[x] = up;
        *changed = 1;
    }
}
