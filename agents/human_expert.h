// Human-expert placements as rules over scope paths (configs/experts/*.yaml).
//
// The papers compare against hand-made placements: NMT/GNMT with one LSTM
// layer per GPU and attention and softmax on the last GPU (ColocRL Sec. 4,
// HRL Sec. 4, GDP), Inception-v3 entirely on one GPU (HRL Table 1),
// Transformer/BERT with consecutive layers split evenly, WaveNet with its
// dilation stacks split (GDP, GO). An expert file states such a placement as
// an ordered list of rules; the first rule whose `scope` regex is found in a
// node's scope path decides its device:
//
//   format: gosim.expert
//   version: 1
//   model: gnmt
//   graphs: ["gnmt*", "nmt*"]       # glob patterns over graph names
//   source: "HRL (Mirhoseini et al. 2018), Sec. 4"
//   rules:
//     - scope: "attention|softmax"
//       device: last                # first | last | <index> (taken modulo the device count)
//     - scope: "layer_(\\d+)"
//       split: even                 # device from the captured index: even | modulo
//       group: 1                    # capture group holding the index (default 1)
//       layers: 8                   # index count for `even` (default: the span of indices seen)
//   default: inherit                # unmatched nodes: first | last | inherit | <index>
//
// Indices count from the smallest one the rule matched in the graph (so
// layer_0.. and layer_1.. numberings behave alike): `even` puts position i
// of L on device floor(i * D / L) (consecutive blocks); `modulo` on i mod D. `inherit` takes the device of
// the node's first producer (nodes are visited in topological order), else the first device.
#ifndef GOSIM_AGENTS_HUMAN_EXPERT_H_
#define GOSIM_AGENTS_HUMAN_EXPERT_H_

#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include "graphs/graph.h"

namespace gosim::agents {

struct ExpertRule {
  enum class Kind { kDevice, kSplitEven, kSplitModulo };
  std::string scope;  // regex, searched (not fully matched) in the scope path
  std::regex pattern;
  Kind kind = Kind::kDevice;
  int32_t device = 0;  // kDevice: index, or kFirst / kLast
  int32_t group = 1;   // capture group with the index (split kinds)
  int32_t layers = 0;  // split even: index count; 0 = max index seen + 1
  std::string where;   // file:line of the rule, for messages
};

struct ExpertRules {
  static constexpr int32_t kFirst = -1;
  static constexpr int32_t kLast = -2;
  static constexpr int32_t kInherit = -3;

  std::string model;
  std::string source;
  std::string file;
  std::vector<std::string> graphs;  // glob patterns
  std::vector<ExpertRule> rules;
  int32_t default_device = kInherit;

  // True when one of `graphs` matches `graph_name`.
  bool AppliesTo(const std::string& graph_name) const;
};

// Parses an expert file; every problem is a ConfigError with its line.
ExpertRules LoadExpertRules(const std::string& path);
ExpertRules ParseExpertRules(const std::string& yaml_text, const std::string& source);

// The expert file in `directory` whose `graphs` patterns match the graph's
// name (the first in file-name order); ConfigError listing the files when
// none does.
ExpertRules FindExpertRules(const std::string& directory, const std::string& graph_name);

// The placement the rules give on `num_devices` devices.
std::vector<int32_t> ExpertPlacement(const ExpertRules& rules, const graphs::Graph& graph,
                                     int32_t num_devices);

}  // namespace gosim::agents

#endif  // GOSIM_AGENTS_HUMAN_EXPERT_H_
