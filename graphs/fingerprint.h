// Content fingerprints of a built graph, for sealing test splits by what a
// graph is rather than by the text that built it (`gosim graphs fingerprint`,
// `gosim graphs leaks`; docs/EXPERIMENTS.md, "Sealed test sets").
//
//   exact   the graph as built: every node's op type, phase, output shapes,
//           dtypes and bytes, FLOPs and persistent bytes, in node order, and
//           every edge (source, destination, output). Names, scopes and
//           measured times do not enter it, so a re-export of one model under
//           another name has the same exact fingerprint.
//   family  insensitive to batch size and to how often a block repeats:
//           Weisfeiler-Lehman labels over op types and phases (no sizes),
//           two rounds, each label a node's own with the *set* of its
//           in-neighbours' and the set of its out-neighbours' labels; the
//           fingerprint is the set of distinct labels of all rounds. BERT
//           with 8 or 12 layers, Inception-v3 at batch 16 or 64 share it;
//           models with other op types or other wiring do not.
#ifndef GOSIM_GRAPHS_FINGERPRINT_H_
#define GOSIM_GRAPHS_FINGERPRINT_H_

#include <string>

#include "graphs/graph.h"

namespace gosim::graphs {

struct GraphFingerprint {
  std::string exact;   // 16 hex digits
  std::string family;  // 16 hex digits
};

GraphFingerprint Fingerprint(const Graph& graph);

}  // namespace gosim::graphs

#endif  // GOSIM_GRAPHS_FINGERPRINT_H_
