// Parsing JSON text with every failure reported as a gosim::Error that names
// the file and the byte where it happened.
//
// nlohmann's parser reports a syntax error with its byte position, but a
// number that does not fit a double (`1e400`) as an out_of_range exception
// with no position at all. ParseJsonText reads through TrackingIterator, which
// publishes how far the lexer has read, so both become
//   file:line:col: invalid JSON: ... / number '1e400' is out of range
// A key repeated in one object, which nlohmann (like most parsers) would
// take silently with the last value winning, is refused the same way.
#ifndef GOSIM_CORE_JSON_TEXT_H_
#define GOSIM_CORE_JSON_TEXT_H_

#include <cstddef>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

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

// The keys of the objects open during a parse, to find a key repeated in one
// object. Cheap per key: a short linear scan, a hash set for large objects.
class JsonKeyTracker {
 public:
  void Open();   // an object starts
  void Close();  // the innermost open object ends
  // False when `key` was already seen in the innermost open object.
  bool Add(const std::string& key);

 private:
  struct Level {
    std::vector<std::string> few;          // up to kFew keys
    std::unordered_set<std::string> many;  // then all of them
  };
  static constexpr size_t kFew = 16;
  std::vector<Level> levels_;  // reused across objects: no allocation per object
  size_t depth_ = 0;
};

// Where a repeated key that the lexer has just read (up to `read`) starts:
// the offset of its opening quote.
size_t KeyStart(std::string_view text, size_t read);

// The one-line message for a key repeated in one JSON object.
std::string DuplicateKeyMessage(const std::string& key);

// nlohmann's SAX DOM builder that refuses a repeated key: `on_duplicate(key)`
// must throw.
template <typename Json, typename OnDuplicate>
class CheckedDomBuilder {
 public:
  using number_integer_t = typename Json::number_integer_t;
  using number_unsigned_t = typename Json::number_unsigned_t;
  using number_float_t = typename Json::number_float_t;
  using string_t = typename Json::string_t;
  using binary_t = typename Json::binary_t;

  CheckedDomBuilder(Json& result, OnDuplicate on_duplicate)
      : dom_(result, /*allow_exceptions_=*/true), on_duplicate_(std::move(on_duplicate)) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& text) { return dom_.number_float(v, text); }
  bool string(string_t& v) { return dom_.string(v); }
  bool binary(binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) {
    keys_.Open();
    return dom_.start_object(n);
  }
  bool end_object() {
    keys_.Close();
    return dom_.end_object();
  }
  bool start_array(std::size_t n) { return dom_.start_array(n); }
  bool end_array() { return dom_.end_array(); }
  bool key(string_t& k) {
    if (!keys_.Add(k)) on_duplicate_(k);
    return dom_.key(k);
  }
  // A template, so that the parse_error nlohmann throws keeps its type.
  template <typename Exception>
  bool parse_error(std::size_t position, const std::string& token, const Exception& e) {
    return dom_.parse_error(position, token, e);
  }

 private:
  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  OnDuplicate on_duplicate_;
  JsonKeyTracker keys_;
};

// Parses `text` (from `file`) into a Json (nlohmann::json or ordered_json).
// Any failure throws ErrorT at its line and column (or, with `lines` false,
// for files that are often one long line, at its byte offset); `hint` says how
// to fix a syntax error. A key repeated in one object is an error.
template <typename ErrorT, typename Json>
Json ParseJsonText(std::string_view text, const std::string& file, const std::string& hint,
                   bool lines = true) {
  const auto at = [&](size_t offset) {
    Location where = TextLocation(text, offset, file);
    if (!lines) where.line = where.column = 0;
    return where;
  };
  const char* read_up_to = text.data();
  const auto on_duplicate = [&](const std::string& key) {
    throw ErrorT(DuplicateKeyMessage(key), at(KeyStart(text, static_cast<size_t>(read_up_to - text.data()))),
                 "remove one of the two: a JSON reader would silently keep only one value");
  };
  try {
    Json result;
    CheckedDomBuilder<Json, decltype(on_duplicate)> builder(result, on_duplicate);
    Json::sax_parse(TrackingIterator(text.data(), &read_up_to),
                    TrackingIterator(text.data() + text.size(), &read_up_to), &builder);
    return result;
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
