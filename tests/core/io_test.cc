#include "core/io.h"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

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

// A gzip member of `chunks` MiB of zeros, built without deflating them all:
// after a full flush deflate starts afresh, so every further MiB compresses
// to the same bytes. The trailer has the right size (ISIZE) but no CRC, and
// the last block is not marked final: read to the end, it is corrupt.
std::string ZeroBomb(int chunks) {
  z_stream stream{};
  REQUIRE(deflateInit2(&stream, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  const std::string zeros(1 << 20, '\0');
  std::string out(1 << 16, '\0');
  const auto deflate_chunk = [&] {
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zeros.data()));
    stream.avail_in = static_cast<uInt>(zeros.size());
    stream.next_out = reinterpret_cast<Bytef*>(out.data());
    stream.avail_out = static_cast<uInt>(out.size());
    REQUIRE(deflate(&stream, Z_FULL_FLUSH) == Z_OK);
    return out.substr(0, out.size() - stream.avail_out);
  };
  std::string bomb = deflate_chunk();  // the gzip header and the first MiB
  const std::string repeat = deflate_chunk();
  deflateEnd(&stream);
  for (int i = 1; i < chunks; ++i) bomb += repeat;
  const uint32_t size = static_cast<uint32_t>(static_cast<uint64_t>(chunks) << 20);
  bomb += std::string(4, '\0');
  for (int k = 0; k < 4; ++k) bomb += static_cast<char>((size >> (8 * k)) & 0xff);
  return bomb;
}

TEST_CASE("a gzip bomb stops early, after 32 MiB, not at the 1 GiB limit") {
  // 1100 MiB of zeros in about 1.1 MB (its trailer says 1100 MiB), and 5000
  // MiB (the trailer says 904 MiB: mod 2^32; the rate says 5 GB).
  for (const int mib : {1100, 5000}) {
    const std::string bomb = ZeroBomb(mib);
    CHECK(bomb.size() < static_cast<size_t>(mib) * 1100);
    try {
      Gunzip(bomb, "bomb.json.gz");
      FAIL("expected an IoError");
    } catch (const IoError& e) {
      const std::string what = e.what();
      CHECK(what.find("would inflate to more than 1073741824 bytes (1.00 GiB, the decompression limit): 32.") !=
            std::string::npos);
      CHECK(what.find(", a decompression bomb's ratio)") != std::string::npos);
      CHECK(what.find("GOSIM_MAX_INFLATED_BYTES") != std::string::npos);
      // Stopped within the first 33 MiB of output (33 KiB of input).
      CHECK(e.where().byte_offset < 40'000);
    }
  }
  // Under a 64 MiB limit: 65 MiB stops early (the trailer agrees with the
  // rate); data that inflates to the limit exactly is read to its end (here
  // a corrupt end: the last block is not final), not taken for a bomb.
  {
    const ScopedEnv env("GOSIM_MAX_INFLATED_BYTES", std::to_string(64 << 20).c_str());
    CHECK_THROWS_WITH_AS(Gunzip(ZeroBomb(65), "over.gz"), doctest::Contains("would inflate to more than"), IoError);
    CHECK_THROWS_WITH_AS(Gunzip(ZeroBomb(64), "limit.gz"), doctest::Contains("gzip data is corrupt"), IoError);
  }
  // Under a raised limit the same data is read in full as far as it goes
  // (here: to its bogus trailer).
  const ScopedEnv env("GOSIM_MAX_INFLATED_BYTES", "2000000000");
  try {
    Gunzip(ZeroBomb(40), "forty.gz");
    FAIL("expected an IoError");
  } catch (const IoError& e) {
    CHECK(std::string(e.what()).find("gzip data is corrupt") != std::string::npos);
  }
}

TEST_CASE("ReadFile refuses devices and folders at once, reads pipes up to the limit") {
  for (const char* device : {"/dev/zero", "/dev/full", "/dev/null"}) {
    try {
      ReadFile(device);
      FAIL("expected an IoError");
    } catch (const IoError& e) {
      CHECK(std::string(e.what()) ==
            std::string(device) +
                ": cannot read it as a file: it is a device (give the path of a regular file)");
    }
  }
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gosim_read_devices";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::create_symlink("/dev/zero", dir / "endless.json");
  try {
    ReadFile((dir / "endless.json").string());
    FAIL("expected an IoError");
  } catch (const IoError& e) {
    CHECK(std::string(e.what()).find("it is a device (through a symbolic link)") != std::string::npos);
  }
  try {
    ReadFile(dir.string());
    FAIL("expected an IoError");
  } catch (const IoError& e) {
    CHECK(std::string(e.what()).find("it is a folder") != std::string::npos);
  }
  // A pipe (what `<(zcat g.json.gz)` gives): read, within the limit.
  const std::string fifo = (dir / "pipe").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // The reader stops early: the writer's last writes then fail (EPIPE), not kill.
  const auto old_sigpipe = ::signal(SIGPIPE, SIG_IGN);
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    const std::string text(300000, 'p');
    size_t written = 0;
    while (written < text.size()) {
      const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
      if (n <= 0) break;
      written += static_cast<size_t>(n);
    }
    ::close(fd);
  });
  {
    const ScopedEnv env("GOSIM_MAX_INFLATED_BYTES", "200000");
    try {
      ReadFile(fifo);
      FAIL("expected an IoError");
    } catch (const IoError& e) {
      CHECK(std::string(e.what()).find("a pipe gave more than 200000 bytes") != std::string::npos);
    }
  }
  writer.join();
  ::signal(SIGPIPE, old_sigpipe);
  std::filesystem::remove_all(dir);
}

TEST_CASE("AppendLine appends whole lines") {
  const std::string path = std::filesystem::temp_directory_path() / "gosim_append_test.jsonl";
  std::filesystem::remove(path);
  AppendLine(path, "{\"a\":1}");
  AppendLine(path, "{\"a\":2}");
  CHECK(ReadFile(path) == "{\"a\":1}\n{\"a\":2}\n");
  std::filesystem::remove(path);
}

TEST_CASE("AppendLine on a full disk throws and leaves the file as it was") {
  // /dev/full through a link: every write fails with ENOSPC.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gosim_append_full";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::create_symlink("/dev/full", dir / "full.jsonl");
  try {
    AppendLine((dir / "full.jsonl").string(), "{\"a\":1}");
    FAIL("expected an IoError");
  } catch (const IoError& e) {
    CHECK(std::string(e.what()).find("write failed: No space left on device") != std::string::npos);
  }
  // A file size limit: the part of the line that fit is cut off again.
  const std::string path = (dir / "limited.jsonl").string();
  AppendLine(path, "{\"a\":1}");
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{20, 20};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    try {
      AppendLine(path, "{\"b\":\"" + std::string(100, 'x') + "\"}");
    } catch (const IoError&) {
      ::_exit(3);
    }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 3);
  CHECK(ReadFile(path) == "{\"a\":1}\n");
  std::filesystem::remove_all(dir);
}

TEST_CASE("CheckWritable fails at once for a folder that cannot take the file") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gosim_check_writable";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  WriteFileAtomic((dir / "file").string(), "x");
  CheckWritable((dir / "out.json").string(), "--out");
  CheckWritable((dir / "new" / "deeper" / "out.json").string(), "--out");  // the writer creates them
  CHECK_FALSE(std::filesystem::exists(dir / "new"));
  const std::string under_file = (dir / "file" / "out.json").string();
  try {
    CheckWritable(under_file, "--out");
    FAIL("expected an IoError");
  } catch (const IoError& e) {
    CHECK(std::string(e.what()) == "--out " + under_file + ": '" + (dir / "file").string() +
                                       "' is not a folder (give a path whose folders are folders)");
  }
  try {
    CheckWritable(dir.string(), "--trace");
    FAIL("expected an IoError");
  } catch (const IoError& e) {
    CHECK(std::string(e.what()) == "--trace " + dir.string() + ": is a folder (give a file name)");
  }
  // /proc takes no new files, whoever runs the test (root included).
  try {
    CheckWritable("/proc/gosim_no_such_folder/out.json", "--out");
    FAIL("expected an IoError");
  } catch (const IoError& e) {
    CHECK(std::string(e.what()).find(
              "--out /proc/gosim_no_such_folder/out.json: cannot write in folder '/proc': ") == 0);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace gosim
