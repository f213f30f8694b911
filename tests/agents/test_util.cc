#include "tests/agents/test_util.h"

#include <algorithm>

#include "core/rng.h"

namespace gosim::agents::testing {

graphs::Graph RandomLayeredGraph(int layers, int width, uint64_t seed) {
  Rng rng(seed);
  graphs::GraphBuilder b("layered_" + std::to_string(layers) + "x" + std::to_string(width) + "_s" +
                         std::to_string(seed));
  std::vector<int> previous;
  for (int l = 0; l < layers; ++l) {
    std::vector<int> current;
    for (int w = 0; w < width; ++w) {
      const double ms = rng.Uniform(0.1, 2.0);
      const int64_t out = 4 * static_cast<int64_t>(rng.UniformInt(1, 1 << 20));
      const int64_t persistent =
          rng.Bernoulli(0.3) ? 4 * static_cast<int64_t>(rng.UniformInt(1, 1 << 20)) : 0;
      current.push_back(b.AddNode(Op("n" + std::to_string(l) + "_" + std::to_string(w), ms, out,
                                     "layer_" + std::to_string(l), persistent)));
    }
    if (!previous.empty()) {
      for (int dst : current) {
        const int fan_in = static_cast<int>(rng.UniformInt(1, 3));
        std::vector<int> used;
        for (int k = 0; k < fan_in; ++k) {
          const int src = previous[rng.UniformInt(static_cast<uint64_t>(previous.size()))];
          if (std::find(used.begin(), used.end(), src) != used.end()) continue;
          used.push_back(src);
          b.AddEdge(src, dst, 0);
        }
      }
    }
    previous = current;
  }
  return b.Build();
}

std::unique_ptr<Agent> Make(const std::string& name, const std::string& yaml) {
  YAML::Node node = LoadYamlString(yaml, "test");
  YamlMap options = YamlMap::Root(node, "test");
  return MakeAgent(name, options);
}

}  // namespace gosim::agents::testing
