#include "agents/brkga/sampler.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace gosim::agents::brkga {

void UniformSampler::Sample(Rng& rng, std::span<double> genes) const {
  for (double& g : genes) g = rng.Uniform();
}

BetaSampler::BetaSampler(std::vector<double> alpha, std::vector<double> beta)
    : alpha_(std::move(alpha)), beta_(std::move(beta)) {
  if (alpha_.size() != beta_.size()) {
    throw Error("BetaSampler: " + std::to_string(alpha_.size()) + " alphas but " +
                std::to_string(beta_.size()) + " betas");
  }
  for (size_t i = 0; i < alpha_.size(); ++i) {
    if (!(alpha_[i] > 0 && beta_[i] > 0 && std::isfinite(alpha_[i]) && std::isfinite(beta_[i]))) {
      throw Error("BetaSampler: gene " + std::to_string(i) + " has alpha " + std::to_string(alpha_[i]) +
                      " and beta " + std::to_string(beta_[i]),
                  {}, "Beta parameters must be finite and > 0");
    }
  }
}

void BetaSampler::Sample(Rng& rng, std::span<double> genes) const {
  if (genes.size() != alpha_.size()) {
    throw Error("BetaSampler: chromosome of " + std::to_string(genes.size()) + " genes, sampler of " +
                std::to_string(alpha_.size()));
  }
  for (size_t i = 0; i < genes.size(); ++i) genes[i] = rng.Beta(alpha_[i], beta_[i]);
}

}  // namespace gosim::agents::brkga
