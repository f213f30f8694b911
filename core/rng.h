// Seedable, splittable random-number generator.
//
// Every random component of gosim takes an Rng explicitly. Results must depend
// only on seeds, never on thread count or scheduling, so parallel work derives
// one stream per work item with Rng::Derive(seed, a, b, ...) (for example
// (seed, generation, individual) in BRKGA) instead of sharing a generator.
//
// The engine is xoshiro256** seeded through SplitMix64. All distributions are
// implemented here (not std::*_distribution, whose output differs between
// standard libraries) so that a seed gives the same numbers everywhere.
// Not thread-safe: use one Rng per thread or per work item.
#ifndef GOSIM_CORE_RNG_H_
#define GOSIM_CORE_RNG_H_

#include <array>
#include <cstdint>
#include <initializer_list>
#include <limits>

namespace gosim {

class Rng {
 public:
  using result_type = uint64_t;

  explicit Rng(uint64_t seed = 0x9e3779b97f4a7c15ULL);

  // A generator whose stream depends only on `seed` and the ordered `keys`.
  static Rng Derive(uint64_t seed, std::initializer_list<uint64_t> keys);
  // A child stream, independent of this one; advances this generator once.
  Rng Split();

  static constexpr uint64_t min() { return 0; }
  static constexpr uint64_t max() { return std::numeric_limits<uint64_t>::max(); }
  uint64_t operator()() { return Next(); }
  uint64_t Next();

  // Uniform in [0, 1) with 53 random bits.
  double Uniform();
  // Uniform in [lo, hi).
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  // Uniform integer in [0, n); n > 0. Unbiased (Lemire's method).
  uint64_t UniformInt(uint64_t n);
  // Uniform integer in [lo, hi] inclusive.
  int64_t UniformInt(int64_t lo, int64_t hi);
  bool Bernoulli(double p) { return Uniform() < p; }
  // Standard normal (Marsaglia polar method).
  double Normal();
  double Normal(double mean, double stddev) { return mean + stddev * Normal(); }
  // Gamma(shape, 1) (Marsaglia-Tsang), shape > 0.
  double Gamma(double shape);
  // Beta(alpha, beta) in (0, 1); alpha, beta > 0.
  double Beta(double alpha, double beta);
  // Log-normal with the given parameters of the underlying normal.
  double LogNormal(double mu, double sigma);

  const std::array<uint64_t, 4>& state() const { return s_; }
  void set_state(const std::array<uint64_t, 4>& s) { s_ = s; has_spare_ = false; }

 private:
  std::array<uint64_t, 4> s_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

// SplitMix64 finalizer: a good 64-bit mix used to combine seeds and keys.
uint64_t Mix64(uint64_t x);

}  // namespace gosim

#endif  // GOSIM_CORE_RNG_H_
