// Parsing JSON text with every failure reported as a gosim::Error that names
// the file and the byte where it happened.
//
// nlohmann's parser reports a syntax error with its byte position, but a
// number that does not fit a double (`1e400`) as an out_of_range exception
// with no position at all. ParseJsonText reads through TrackingIterator, which
// publishes how far the lexer has read, so both become
//   file:line:col: invalid JSON: ... / number '1e400' is out of range
// The header needs nlohmann/json.hpp only in the files that include it.
#ifndef GOSIM_CORE_JSON_TEXT_H_
#define GOSIM_CORE_JSON_TEXT_H_

#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>

#include "core/error.h"

namespace gosim {

// 1-based line and column, and the byte offset, of byte `offset` of `text`.
Location TextLocation(std::string_view text, size_t offset, const std::string& file);

// nlohmann's exception text without its "[json.exception.X.N] " prefix and
// without the "parse error at line L, column C: " part (the location is
// reported separately).
std::string JsonErrorText(const std::string& what);

// Where the number that ends at or just before byte `read` of `text` starts
// (the lexer has read one byte past a number to see that it ended).
size_t NumberStart(std::string_view text, size_t read);

// A forward iterator over `text` that stores, in *read_up_to, how far the
// parser has read it.
class TrackingIterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  TrackingIterator() = default;
  TrackingIterator(const char* p, const char** read_up_to) : p_(p), read_up_to_(read_up_to) {}

  reference operator*() const { return *p_; }
  TrackingIterator& operator++() {
    *read_up_to_ = ++p_;
    return *this;
  }
  TrackingIterator operator++(int) {
    TrackingIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const TrackingIterator& other) const { return p_ == other.p_; }
  bool operator!=(const TrackingIterator& other) const { return p_ != other.p_; }

 private:
  const char* p_ = nullptr;
  const char** read_up_to_ = nullptr;
};

// Parses `text` (from `file`) into a Json (nlohmann::json or ordered_json).
// Any failure throws ErrorT at its line and column (or, with `lines` false,
// for files that are often one long line, at its byte offset); `hint` says how
// to fix a syntax error.
template <typename ErrorT, typename Json>
Json ParseJsonText(std::string_view text, const std::string& file, const std::string& hint,
                   bool lines = true) {
  const auto at = [&](size_t offset) {
    Location where = TextLocation(text, offset, file);
    if (!lines) where.line = where.column = 0;
    return where;
  };
  const char* read_up_to = text.data();
  try {
    return Json::parse(TrackingIterator(text.data(), &read_up_to),
                       TrackingIterator(text.data() + text.size(), &read_up_to));
  } catch (const typename Json::parse_error& e) {
    const size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    const bool truncated = e.byte >= text.size();
    throw ErrorT(std::string(truncated ? "invalid JSON (the file is truncated): " : "invalid JSON: ") +
                     JsonErrorText(e.what()),
                 at(offset), hint);
  } catch (const typename Json::exception& e) {
    // out_of_range.406: a number beyond the range of a double, which the
    // lexer has just read.
    throw ErrorT(JsonErrorText(e.what()),
                 at(NumberStart(text, static_cast<size_t>(read_up_to - text.data()))),
                 "numbers must fit a 64-bit double (magnitude below 1.8e308)");
  }
}

// j.dump(indent) that never throws on text that is not valid UTF-8 (node
// names read from a CostGraphDef or ONNX file, YAML values): such bytes are
// written as U+FFFD. For JSON a reader must match names in, refuse instead
// (graphs/json_format.cc, sim/decision_json.cc).
template <typename Json>
std::string DumpJson(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace gosim

#endif  // GOSIM_CORE_JSON_TEXT_H_
