#include "core/version.h"

#include "gosim_code_version.h"  // generated in the build folder

namespace gosim {

std::string CodeVersion::ToString() const {
  return dirty ? commit + "-dirty" : commit;
}

std::string CodeVersion::Short() const {
  const std::string head = commit.substr(0, 12);
  return dirty ? head + "-dirty" : head;
}

const CodeVersion& BuildCodeVersion() {
  static const CodeVersion version{GOSIM_GIT_COMMIT, GOSIM_GIT_DIRTY != 0};
  return version;
}

}  // namespace gosim
