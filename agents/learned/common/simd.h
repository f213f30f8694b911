// Vectors of floats for the learned agents' hand-written CPU kernels (GO's
// fused attention, the row-parallel linear layer), with GCC's vector
// extension, and the run-time choice between their widths.
//
// On x86 with GCC each kernel is compiled three times and the CPU's features
// choose one at run time: for x86-64-v4 (AVX-512) with vectors of 16 floats,
// and for x86-64-v3 (AVX2, FMA) and the baseline with vectors of 8 (the
// baseline splits each into two SSE registers). Elsewhere vectors of 8 only.
#ifndef GOSIM_AGENTS_LEARNED_COMMON_SIMD_H_
#define GOSIM_AGENTS_LEARNED_COMMON_SIMD_H_

#include <cstdint>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define GOSIM_SIMD_X86 1
// A function compiled for another -march inlines only what is declared
// always_inline.
#define GOSIM_SIMD_INLINE __attribute__((always_inline)) inline
#else
#define GOSIM_SIMD_X86 0
#define GOSIM_SIMD_INLINE inline
#endif

namespace gosim::agents::learned::simd {

// Vectors of W floats and of W 32-bit integers, unaligned and aliasing
// floats. Spelled out per width: GCC drops a vector_size that depends on a
// template parameter (the type silently becomes a scalar).
template <int W>
struct VecTypes;
template <>
struct VecTypes<8> {
  typedef float Vec __attribute__((vector_size(32), aligned(alignof(float)), may_alias));
  typedef std::int32_t IntVec __attribute__((vector_size(32), aligned(alignof(float)), may_alias));
};
template <>
struct VecTypes<16> {
  typedef float Vec __attribute__((vector_size(64), aligned(alignof(float)), may_alias));
  typedef std::int32_t IntVec __attribute__((vector_size(64), aligned(alignof(float)), may_alias));
};

// The operations every kernel uses, for vectors of W floats.
template <int W>
struct Ops {
  using Vec = typename VecTypes<W>::Vec;
  using IntVec = typename VecTypes<W>::IntVec;
  static constexpr int64_t kWidth = W;

  GOSIM_SIMD_INLINE static Vec Load(const float* p) { return *reinterpret_cast<const Vec*>(p); }
  GOSIM_SIMD_INLINE static void Store(float* p, Vec v) { *reinterpret_cast<Vec*>(p) = v; }
  GOSIM_SIMD_INLINE static Vec Splat(float a) { return Vec{} + a; }
  GOSIM_SIMD_INLINE static float Sum(Vec v) {
    float sum = 0.0F;
    for (int64_t t = 0; t < kWidth; ++t) sum += v[t];
    return sum;
  }
  // n rounded up to whole vectors.
  GOSIM_SIMD_INLINE static int64_t RoundUp(int64_t n) { return (n + kWidth - 1) / kWidth * kWidth; }
};

// Widest vector any kernel uses, in floats (buffers are padded to it).
constexpr int64_t kMaxLanes = 16;

// n rounded up to whole vectors of the widest width.
inline int64_t PadToLanes(int64_t n) {
  return (n + kMaxLanes - 1) / kMaxLanes * kMaxLanes;
}

// Whether the kernels of 16 floats run: the CPU has x86-64-v4 (AVX-512) and
// no test asked for 8. Always false where GOSIM_SIMD_X86 is 0.
bool UseWide();

// Tests: 8 runs the 8-float kernels even where the CPU has AVX-512, 0
// restores the choice by the CPU.
void SetWidthForTesting(int width);

}  // namespace gosim::agents::learned::simd

#endif  // GOSIM_AGENTS_LEARNED_COMMON_SIMD_H_
