// Allocator settings for the programs (gosim, the test and benchmark mains).
//
// LibTorch allocates and frees tensors of a few MB to a few tens of MB many
// times per PPO step. With glibc's default, dynamic thresholds, freed memory
// goes back to the kernel and the next allocation faults the same pages in
// again: a GO fine-tuning run on a 1.5k-node graph spent half its time in
// the kernel (2.3 M minor page faults in 7.5 s). The fix is glibc's own
// tunables: keep up to 512 MB of freed memory, serve blocks below 256 MB
// from the heap, grow it 64 MB at a time. The 256 MB matter: GO's attention
// scores at 16 samples, 4 heads and segments of 256 with 256 of memory are
// 33.5 MB, and with the earlier 32 MB threshold each of them was an mmap and
// a munmap (a 160-evaluation Inception-v3 GO run: 5.6 s of system time
// against 0.3 s; docs/BENCHMARKS.md, "Allocator settings").
//
// The GLIBC_TUNABLES variable, read when the process starts, has the full
// effect. With the earlier 32 MB mmap threshold, the same values set with
// mallopt() in main() removed only part of the faults (7.4-9.1 s untuned,
// 5.7-6.2 s with mallopt, 3.9-4.3 s with the variable); with today's values
// mallopt() before main() removed them all on the GO run of
// docs/BENCHMARKS.md (system time 7.3 s untuned, 0.15 s). So TuneAllocator
// sets the variable and executes the program again (/proc/self/exe, same
// arguments; a few ms, as `gosim` no longer links LibTorch), once: the
// second start finds the variable set. `gosim` calls it only for runs that
// will use LibTorch (experiments/commands.h, PrepareForLibTorch); the
// Python module calls it with no arguments when it is imported, which sets
// the values with mallopt() only. It does nothing when GLIBC_TUNABLES or a
// MALLOC_*_ variable is already set (the user's choice wins), when
// GOSIM_NO_ALLOCATOR_TUNING is set (say so under valgrind or gdb, which
// should keep the process they started), or off glibc; if the
// re-execution fails it falls back to mallopt() and goes on.
#ifndef GOSIM_CORE_ALLOCATOR_H_
#define GOSIM_CORE_ALLOCATOR_H_

#include <string>

namespace gosim {

// The settings, and the GLIBC_TUNABLES value that carries them.
inline constexpr long kMallocTrimThreshold = 512L << 20;  // freed memory kept for reuse
inline constexpr long kMallocMmapThreshold = 256L << 20;  // blocks this large or larger are mmap()ed
inline constexpr long kMallocTopPad = 64L << 20;          // heap growth per step
std::string AllocatorTunables();

// Call with main's arguments before any work; may not return (the program
// starts again with the tunables in place). With argv null: mallopt() only.
void TuneAllocator(char** argv);

}  // namespace gosim

#endif  // GOSIM_CORE_ALLOCATOR_H_
