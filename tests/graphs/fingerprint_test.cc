#include "graphs/fingerprint.h"

#include <doctest/doctest.h>

#include <string>

#include "core/yaml.h"
#include "graphs/generators/generators.h"
#include "graphs/graph_builder.h"

namespace gosim::graphs {
namespace {

Graph Gen(const std::string& name, const std::string& params) {
  return Generate(name, LoadYamlString(params), "test", "");
}

// A chain of `n` blocks Linear -> Relu of width `w` (bytes scale with w).
Graph Chain(int n, int64_t w, const std::string& name = "chain") {
  GraphBuilder b(name);
  int prev = -1;
  for (int i = 0; i < n; ++i) {
    for (const char* op : {"Linear", "Relu"}) {
      NodeSpec s;
      s.name = std::string(op) + std::to_string(i);
      s.op = op;
      s.flops = static_cast<double>(w * w);
      s.outputs.push_back(TensorInfo{4 * w, {w}, DType::kFloat32});
      const int v = b.AddNode(s);
      if (prev >= 0) b.AddEdge(prev, v, 0);
      prev = v;
    }
  }
  return b.Build();
}

}  // namespace

TEST_CASE("fingerprint: exact ignores names, sees sizes and edges; family ignores batch and depth") {
  const GraphFingerprint a = Fingerprint(Chain(5, 64));
  CHECK(a.exact.size() == 16);
  CHECK(a.family.size() == 16);
  CHECK(Fingerprint(Chain(5, 64, "renamed")).exact == a.exact);  // names do not enter it
  CHECK(Fingerprint(Chain(5, 128)).exact != a.exact);            // sizes do
  CHECK(Fingerprint(Chain(5, 128)).family == a.family);          // but not the family
  CHECK(Fingerprint(Chain(9, 64)).exact != a.exact);
  CHECK(Fingerprint(Chain(9, 64)).family == a.family);  // three or more repetitions: one family
  // Real generators: the near-duplicates are found; other models are not.
  const GraphFingerprint inception = Fingerprint(Gen("inception_v3", "{training: true}"));
  CHECK(Fingerprint(Gen("inception_v3", "{training: true, batch: 64}")).family == inception.family);
  CHECK(Fingerprint(Gen("inception_v3", "{training: true, batch: 64}")).exact != inception.exact);
  CHECK(Fingerprint(Gen("inception_v3", "{training: true, batch: 32}")).exact == inception.exact);
  CHECK(Fingerprint(Gen("bert", "{layers: 8}")).family == Fingerprint(Gen("bert", "{layers: 12}")).family);
  CHECK(Fingerprint(Gen("resnet", "{depth: 50}")).family != inception.family);
  CHECK(Fingerprint(Gen("resnet", "{depth: 50}")).family != Fingerprint(Gen("bert", "{layers: 8}")).family);
  CHECK(Fingerprint(Gen("regal_random", "{seed: 1}")).family !=
        Fingerprint(Gen("regal_random", "{seed: 2}")).family);
}

}  // namespace gosim::graphs
