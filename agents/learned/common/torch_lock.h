// One LibTorch agent at a time per process.
//
// LibTorch's CPU kernels (Linear, matmul) call the system BLAS, and the
// BLAS that Debian installs for it (openblas-serial, 0.3.21) is not safe to
// call from two threads at once: two threads running the same 256 x 64 by
// 64 x 64 torch::mm get silently wrong results in 36-656 of 40,000 calls,
// none with this lock (BM_ConcurrentMatmul in tests/bench/learned_bench.cc,
// docs/BENCHMARKS.md). `gosim run` with `parallel_cells: true` runs
// cells on concurrent threads, so two learned agents there would corrupt
// each other's forward and backward passes: two GO cells of 200 evaluations
// ended at 261.5 and 263.9 ms where a sequential run gives 263.9 and 263.9.
//
// Every learned agent therefore holds this process-wide lock while it uses
// LibTorch (GO and HRL for their whole run, which interleaves the policy
// with the simulator; REGAL while it loads its checkpoint and runs the
// policy once, not during its BRKGA search): GO and HRL cells run one
// after another, the other agents' cells still run beside them, and the
// results are those of a sequential run (docs/EXPERIMENTS.md, "Parallel cells").
// Separate processes (`mpirun`, two `gosim` commands) are unaffected.
#ifndef GOSIM_AGENTS_LEARNED_COMMON_TORCH_LOCK_H_
#define GOSIM_AGENTS_LEARNED_COMMON_TORCH_LOCK_H_

#include <mutex>

namespace gosim::agents::learned {

// Held for the scope of the returned lock.
inline std::unique_lock<std::mutex> LockTorch() {
  static std::mutex mutex;
  return std::unique_lock<std::mutex>(mutex);
}

}  // namespace gosim::agents::learned

#endif  // GOSIM_AGENTS_LEARNED_COMMON_TORCH_LOCK_H_
