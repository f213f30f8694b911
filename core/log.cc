#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "core/error.h"

namespace gosim {
namespace {

LogLevel InitialLevel() {
  const char* env = std::getenv("GOSIM_LOG_LEVEL");
  if (env == nullptr) return LogLevel::kInfo;
  try {
    return ParseLogLevel(env);
  } catch (const Error&) {
    return LogLevel::kInfo;
  }
}

std::atomic<LogLevel>& Level() {
  static std::atomic<LogLevel> level{InitialLevel()};
  return level;
}

}  // namespace

void SetLogLevel(LogLevel level) { Level().store(level); }
LogLevel GetLogLevel() { return Level().load(); }

LogLevel ParseLogLevel(const std::string& name) {
  if (name == "debug") return LogLevel::kDebug;
  if (name == "info") return LogLevel::kInfo;
  if (name == "warn") return LogLevel::kWarn;
  if (name == "error") return LogLevel::kError;
  if (name == "off") return LogLevel::kOff;
  throw ConfigError("unknown log level '" + name + "'", {}, "use debug, info, warn, error or off");
}

void LogLine(LogLevel level, const std::string& message) {
  static std::mutex mutex;
  static const char* const kTags[] = {"debug", "info", "warn", "error", ""};
  std::lock_guard<std::mutex> lock(mutex);
  std::fprintf(stderr, "[%s] %s\n", kTags[static_cast<int>(level)], message.c_str());
  std::fflush(stderr);
}

}  // namespace gosim
