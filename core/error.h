// Error types of gosim.
//
// Library code reports every problem by throwing a gosim::Error (or one of its
// subclasses); it never calls exit() and never prints and continues. The
// command-line program catches once in main(), prints Error::what() as one
// line and exits non-zero.
//
// An Error carries where the problem is: a file, a 1-based line and column
// (0 when unknown), a byte offset (for binary or single-line files), and a
// YAML/JSON path such as `agents[2].budget`. what() renders all of it as
//   file:line:col: [path] message (hint)
// on one line: control characters in any part (a newline or an ANSI escape
// echoed from a user's file) are written as escapes such as `\n`, `\x1b`.
#ifndef GOSIM_CORE_ERROR_H_
#define GOSIM_CORE_ERROR_H_

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace gosim {

// Where in an input a problem was found. Every field is optional.
struct Location {
  Location() = default;
  Location(std::string file_name, int line_number = 0, int column_number = 0)  // NOLINT: implicit by design
      : file(std::move(file_name)), line(line_number), column(column_number) {}

  std::string file;          // path as the user gave it
  int line = 0;              // 1-based; 0 = unknown
  int column = 0;            // 1-based; 0 = unknown
  int64_t byte_offset = -1;  // -1 = unknown
  std::string path;          // YAML/JSON path, e.g. "clusters[0].links[3].bandwidth"

  // "file:line:col" / "file:byte N" / "" with the path appended in brackets.
  std::string ToString() const;
};

class Error : public std::runtime_error {
 public:
  // `message` says what is wrong; `hint` (may be empty) says how to fix it.
  explicit Error(std::string message, Location where = {}, std::string hint = {});

  const std::string& message() const { return message_; }
  const Location& where() const { return where_; }
  const std::string& hint() const { return hint_; }
  // Kind of error for the one-line report, e.g. "config error".
  virtual const char* kind() const { return "error"; }

 private:
  static std::string Render(const std::string& message, const Location& where, const std::string& hint);
  std::string message_;
  Location where_;
  std::string hint_;
};

#define GOSIM_DEFINE_ERROR(Name, kind_text)                 \
  class Name : public Error {                               \
   public:                                                  \
    using Error::Error;                                     \
    const char* kind() const override { return kind_text; } \
  };

// A YAML configuration or command-line option is invalid.
GOSIM_DEFINE_ERROR(ConfigError, "config error")
// A graph file or generated graph is malformed or inconsistent.
GOSIM_DEFINE_ERROR(GraphError, "graph error")
// A profiler trace is malformed, truncated or of an unknown schema.
GOSIM_DEFINE_ERROR(TraceError, "trace error")
// A decision (placement / schedule / fusion) does not fit its graph or cluster.
GOSIM_DEFINE_ERROR(DecisionError, "decision error")
// Reading or writing a file failed at the operating-system level.
GOSIM_DEFINE_ERROR(IoError, "i/o error")
// A checkpoint or results file cannot be used.
GOSIM_DEFINE_ERROR(StateError, "state error")

#undef GOSIM_DEFINE_ERROR

// `text` with every control character (C0, DEL and the C1 range U+0080-U+009F
// in UTF-8) written as a visible escape (`\n`, `\t`, `\r`, `\x1b`,
// `\u009b`), and every byte that is not part of well-formed UTF-8 (a node
// name read from a CostGraphDef or ONNX file may hold any bytes) as `\xNN`,
// so that it prints as one line of UTF-8 and cannot drive a terminal. Other
// characters, UTF-8 letters included, are kept.
std::string EscapeControl(std::string_view text);

}  // namespace gosim

#endif  // GOSIM_CORE_ERROR_H_
