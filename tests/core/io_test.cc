#include "core/io.h"

#include <doctest/doctest.h>

#include <filesystem>

#include "core/error.h"

namespace gosim {

TEST_CASE("gzip round trip and transparent read") {
  const std::string dir = std::filesystem::temp_directory_path() / "gosim_io_test";
  std::filesystem::remove_all(dir);
  const std::string text(10000, 'x');
  WriteFileAtomic(dir + "/a.txt.gz", text);
  WriteFileAtomic(dir + "/b.txt", "plain");
  CHECK(IsGzip(ReadFile(dir + "/a.txt.gz")) == false);
  CHECK(ReadFile(dir + "/a.txt.gz") == text);
  CHECK(ReadFile(dir + "/b.txt") == "plain");
  CHECK(Gunzip(Gzip("hello"), "mem") == "hello");
  std::filesystem::remove_all(dir);
}

TEST_CASE("truncated and corrupt gzip are IoErrors, missing files too") {
  const std::string z = Gzip(std::string(5000, 'q') + "tail");
  CHECK_THROWS_AS(Gunzip(z.substr(0, z.size() / 2), "t.gz"), IoError);
  std::string bad = z;
  bad[12] = static_cast<char>(bad[12] ^ 0x55);
  bad[13] = static_cast<char>(bad[13] ^ 0x55);
  CHECK_THROWS_AS(Gunzip(bad, "c.gz"), IoError);
  CHECK_THROWS_AS(ReadFile("/nonexistent/file.json"), IoError);
}

TEST_CASE("AppendLine appends whole lines") {
  const std::string path = std::filesystem::temp_directory_path() / "gosim_append_test.jsonl";
  std::filesystem::remove(path);
  AppendLine(path, "{\"a\":1}");
  AppendLine(path, "{\"a\":2}");
  CHECK(ReadFile(path) == "{\"a\":1}\n{\"a\":2}\n");
  std::filesystem::remove(path);
}

}  // namespace gosim
