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

}  // namespace gosim
