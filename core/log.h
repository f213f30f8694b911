// Minimal leveled logging to stderr. Thread-safe (one line per call).
//
//   GOSIM_LOG(Info) << "loaded " << n << " graphs";
//
// The level is set once by the command-line program (--verbose / --quiet) or
// the GOSIM_LOG_LEVEL environment variable (debug, info, warn, error).
#ifndef GOSIM_CORE_LOG_H_
#define GOSIM_CORE_LOG_H_

#include <sstream>
#include <string>

namespace gosim {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
// Parses "debug" / "info" / "warn" / "error" / "off"; throws ConfigError.
LogLevel ParseLogLevel(const std::string& name);
void LogLine(LogLevel level, const std::string& message);

class LogMessage {
 public:
  explicit LogMessage(LogLevel level) : level_(level) {}
  ~LogMessage() { LogLine(level_, stream_.str()); }
  template <typename T>
  LogMessage& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

}  // namespace gosim

#define GOSIM_LOG(level)                                                    \
  if (::gosim::LogLevel::k##level < ::gosim::GetLogLevel()) {               \
  } else                                                                    \
    ::gosim::LogMessage(::gosim::LogLevel::k##level)

#endif  // GOSIM_CORE_LOG_H_
