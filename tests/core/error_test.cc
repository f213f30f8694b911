#include "core/error.h"

#include <doctest/doctest.h>

namespace gosim {

TEST_CASE("Error renders file, line, column, path and hint in one line") {
  Location where{"cluster.yaml", 12, 5};
  where.path = "links[3].bandwidth";
  ConfigError e("bandwidth must be positive", where, "use a value in bytes/s");
  CHECK(std::string(e.what()) ==
        "cluster.yaml:12:5: [links[3].bandwidth]: bandwidth must be positive (use a value in bytes/s)");
  CHECK(std::string(e.kind()) == "config error");
  CHECK(e.where().line == 12);
}

TEST_CASE("Error with a byte offset and no line") {
  Location where{"model.onnx"};
  where.byte_offset = 1234;
  GraphError e("truncated protobuf", where);
  CHECK(std::string(e.what()) == "model.onnx: byte 1234: truncated protobuf");
}

TEST_CASE("Error subclasses are caught as gosim::Error") {
  bool caught = false;
  try {
    throw TraceError("unknown schema");
  } catch (const Error& e) {
    caught = true;
    CHECK(std::string(e.kind()) == "trace error");
    CHECK(e.message() == "unknown schema");
  }
  CHECK(caught);
}

TEST_CASE("Control characters echoed from user input are escaped: one line, no terminal codes") {
  // A node name with a newline, an ANSI "clear screen" and a C1 CSI (U+009B).
  Location where{"g\nraph.json", 3, 1};
  where.path = "nodes[0].name";
  GraphError e(
      "duplicate node name 'a\nb\x1b[2J\tc\r\x7f\xc2\x9b"
      "d'",
      where, "rename one\x07");
  CHECK(std::string(e.what()) ==
        "g\\nraph.json:3:1: [nodes[0].name]: duplicate node name "
        "'a\\nb\\x1b[2J\\tc\\r\\x7f\\u009bd' (rename one\\x07)");
  // The raw parts stay available to code that needs them.
  CHECK(e.message().find('\n') != std::string::npos);
  // UTF-8 letters and backslashes are kept as they are.
  CHECK(EscapeControl("caf\xc3\xa9 \\ \xe2\x80\x94") == "caf\xc3\xa9 \\ \xe2\x80\x94");
  CHECK(EscapeControl(std::string("a\0b", 3)) == "a\\x00b");
  // Bytes that are not well-formed UTF-8 are escaped one by one: a lone lead
  // byte, a stray continuation byte, an overlong form, a surrogate, beyond
  // U+10FFFF; 4-byte characters are kept.
  CHECK(EscapeControl("end\xc2") == "end\\xc2");
  CHECK(EscapeControl("a\xff\xfe\x80"
                      "b") == "a\\xff\\xfe\\x80b");
  CHECK(EscapeControl("\xc0\xaf") == "\\xc0\\xaf");
  CHECK(EscapeControl("\xe0\x80\xaf") == "\\xe0\\x80\\xaf");
  CHECK(EscapeControl("\xed\xa0\x80") == "\\xed\\xa0\\x80");
  CHECK(EscapeControl("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");
  CHECK(EscapeControl("\xe2\x82") == "\\xe2\\x82");  // truncated
  CHECK(EscapeControl("\xf0\x9f\x98\x80 \xef\xbf\xbd") == "\xf0\x9f\x98\x80 \xef\xbf\xbd");
}

}  // namespace gosim
