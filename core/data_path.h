// Paths of the project's own data (configs/clusters, configs/calibrated,
// configs/suites, graphs/data, ...) so that gosim runs from any working
// directory, not only from the repository root.
#ifndef GOSIM_CORE_DATA_PATH_H_
#define GOSIM_CORE_DATA_PATH_H_

#include <string>

namespace gosim {

// `path` itself when it exists (absolute, or relative to the working
// directory); else, for a relative path, the same path under $GOSIM_HOME
// when that exists, else under the source tree gosim was built from when
// that exists; else `path` unchanged (so that the caller's "not found" error
// names what the user gave).
std::string ResolveDataPath(const std::string& path);

}  // namespace gosim

#endif  // GOSIM_CORE_DATA_PATH_H_
