// Where BRKGA's fresh chromosomes (the initial population and the mutants of
// every generation) come from. Uniform keys by default; REGAL (Paliwal et
// al. 2020, Sec. 3) replaces them with one Beta(alpha, beta) per gene that a
// graph neural network predicts, which plugs in here as a BetaSampler.
#ifndef GOSIM_AGENTS_BRKGA_SAMPLER_H_
#define GOSIM_AGENTS_BRKGA_SAMPLER_H_

#include <span>
#include <vector>

#include "core/rng.h"

namespace gosim::agents::brkga {

class GeneSampler {
 public:
  virtual ~GeneSampler() = default;
  // Fills `genes` with one fresh chromosome, drawing only from `rng`.
  // Thread-safe (const; called concurrently with different generators).
  virtual void Sample(Rng& rng, std::span<double> genes) const = 0;
};

// Every gene uniform in [0, 1).
class UniformSampler : public GeneSampler {
 public:
  void Sample(Rng& rng, std::span<double> genes) const override;
};

// Gene i drawn from Beta(alpha[i], beta[i]). Both vectors have the
// chromosome's length and hold values > 0 (checked; Error otherwise).
class BetaSampler : public GeneSampler {
 public:
  BetaSampler(std::vector<double> alpha, std::vector<double> beta);
  // Error when `genes` does not have the length of alpha and beta.
  void Sample(Rng& rng, std::span<double> genes) const override;
  size_t size() const { return alpha_.size(); }

 private:
  std::vector<double> alpha_;
  std::vector<double> beta_;
};

}  // namespace gosim::agents::brkga

#endif  // GOSIM_AGENTS_BRKGA_SAMPLER_H_
