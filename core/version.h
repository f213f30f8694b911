// The code version gosim was built from: the git commit of the source tree
// and whether tracked files differed from it, captured at build time by
// cmake/GosimCodeVersion.cmake (the one place that reads git). Experiment
// cells record it in their identity (experiments/cells.h) and `gosim
// --version` prints it.
#ifndef GOSIM_CORE_VERSION_H_
#define GOSIM_CORE_VERSION_H_

#include <string>

namespace gosim {

struct CodeVersion {
  std::string commit;  // 40 hex digits, or "unknown" outside a git checkout
  bool dirty = false;  // tracked files differed from `commit` when built

  // "<commit>" or "<commit>-dirty".
  std::string ToString() const;
  // The first 12 digits of the commit, "-dirty" appended when dirty.
  std::string Short() const;
};

// The version of this build.
const CodeVersion& BuildCodeVersion();

}  // namespace gosim

#endif  // GOSIM_CORE_VERSION_H_
