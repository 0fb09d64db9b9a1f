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

#include "kernels/helpers.cuh"

#include "kernels/moves.cuh"

#include "kernels/schedule.cuh"

#include "kernels/strategies.cuh"

#include "kernels/chunked.cuh"

#include "kernels/vertex.cuh"
