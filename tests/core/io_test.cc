#include "core/io.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

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

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST_CASE("concatenated gzip members inflate to their concatenation; other trailing data is refused") {
  const std::string a = Gzip("first member\n");
  const std::string b = Gzip(std::string(70000, 'b'));
  CHECK(Gunzip(a + b, "two.gz") == "first member\n" + std::string(70000, 'b'));
  CHECK(Gunzip(a + b + a, "three.gz").size() == 13 + 70000 + 13);
  for (const std::string& tail : {std::string("garbage"), std::string(1, '\0'), std::string("\x1f")}) {
    try {
      Gunzip(a + tail, "tail.gz");
      FAIL("expected an IoError");
    } catch (const IoError& e) {
      CHECK(e.where().file == "tail.gz");
      CHECK(e.where().byte_offset == static_cast<int64_t>(a.size()));
      CHECK(e.message() == "data after the end of the gzip stream");
    }
  }
  // A second member that is cut short is truncated data, not ignored.
  CHECK_THROWS_AS(Gunzip(a + b.substr(0, b.size() / 2), "cut.gz"), IoError);
}

TEST_CASE("a decompression limit stops a gzip bomb with one line naming the file") {
  CHECK(MaxInflatedBytes() == (int64_t{1} << 30));
  const std::string bomb = Gzip(std::string(1 << 20, '\0'));  // 1 MiB of zeros: about 1 KiB compressed
  CHECK(bomb.size() < 2000);
  {
    const ScopedEnv env("GOSIM_MAX_INFLATED_BYTES", "100000");
    CHECK(MaxInflatedBytes() == 100000);
    try {
      Gunzip(bomb, "bomb.json.gz");
      FAIL("expected an IoError");
    } catch (const IoError& e) {
      const std::string what = e.what();
      CHECK(what.rfind("bomb.json.gz: byte ", 0) == 0);
      CHECK(what.find("inflates to more than 100000 bytes (97.66 KiB, the decompression limit)") !=
            std::string::npos);
      CHECK(what.find("GOSIM_MAX_INFLATED_BYTES") != std::string::npos);
    }
    CHECK(Gunzip(Gzip(std::string(100000, 'x')), "exact.gz").size() == 100000);  // at the limit: read
  }
  CHECK(Gunzip(bomb, "bomb.json.gz").size() == (1u << 20));
  for (const char* bad : {"lots", "-5", "0", "12k", "99999999999999999999"}) {
    const ScopedEnv env("GOSIM_MAX_INFLATED_BYTES", bad);
    CHECK_THROWS_AS(Gunzip(bomb, "bomb.json.gz"), ConfigError);
  }
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
