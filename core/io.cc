#include "core/io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/strings.h"

namespace gosim {
namespace fs = std::filesystem;

bool IsGzip(std::string_view data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

int64_t MaxInflatedBytes() {
  const char* text = std::getenv("GOSIM_MAX_INFLATED_BYTES");
  if (text == nullptr || *text == '\0') return kDefaultMaxInflatedBytes;
  const std::string_view value(text);
  int64_t limit = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), limit);
  if (ec != std::errc() || end != value.data() + value.size() || limit <= 0) {
    throw ConfigError(
        "GOSIM_MAX_INFLATED_BYTES='" + std::string(value) + "' is not a positive number of bytes",
        Location{"environment"}, "e.g. GOSIM_MAX_INFLATED_BYTES=4294967296 for 4 GiB");
  }
  return limit;
}

namespace {

constexpr const char* kRaiseLimit =
    "if the file is genuine, raise the limit with the environment variable GOSIM_MAX_INFLATED_BYTES (in "
    "bytes)";

std::string OverLimit(int64_t limit) {
  return std::to_string(limit) + " bytes (" + FormatBytes(static_cast<double>(limit)) +
         ", the decompression limit)";
}

// Past this much output, a ratio of output to compressed input above
// kBombRatio that would pass the limit stops the inflation (Gunzip).
constexpr int64_t kBombCheckBytes = int64_t{32} << 20;
constexpr double kBombRatio = 500.0;

// The ISIZE field of the gzip trailer that ends `data` (at least 18 bytes):
// the size of its last member's data mod 2^32.
uint32_t TrailerSize(std::string_view data) {
  uint32_t size = 0;
  for (size_t k = 0; k < 4; ++k)
    size |= static_cast<uint32_t>(static_cast<unsigned char>(data[data.size() - 4 + k])) << (8 * k);
  return size;
}

}  // namespace

std::string Gunzip(std::string_view data, const std::string& name) {
  const int64_t limit = MaxInflatedBytes();
  const auto fail_at = [&](const std::string& what, int64_t offset, const std::string& hint) {
    Location where{name};
    where.byte_offset = offset;
    throw IoError(what, where, hint);
  };
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 32) != Z_OK) throw IoError("zlib initialization failed", {name});
  const auto fail = [&](const std::string& what, int64_t offset, const std::string& hint) {
    inflateEnd(&stream);
    fail_at(what, offset, hint);
  };
  std::string out;
  char buffer[1 << 16];
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  for (;;) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof(buffer);
    const int status = inflate(&stream, Z_NO_FLUSH);
    if (status != Z_OK && status != Z_STREAM_END) {
      fail(status == Z_BUF_ERROR ? "gzip data is truncated" : "gzip data is corrupt",
           static_cast<int64_t>(data.size() - stream.avail_in), "re-create or re-download the file");
    }
    const size_t produced = sizeof(buffer) - stream.avail_out;
    const int64_t total = static_cast<int64_t>(out.size() + produced);
    const int64_t consumed = static_cast<int64_t>(data.size() - stream.avail_in);
    if (total > limit) {
      fail("gzip data inflates to more than " + OverLimit(limit), consumed, kRaiseLimit);
    }
    // A "zip bomb" (deflate reaches 1032:1 on repeated bytes; the committed
    // graphs and traces 13-30:1): at its rate so far it would pass the
    // limit, and its trailer says so too; or it would pass twice the limit
    // (ISIZE is mod 2^32). The rate is an estimate: a file at the limit
    // must still read.
    if (total > kBombCheckBytes && consumed > 0) {
      const double ratio = static_cast<double>(total) / static_cast<double>(consumed);
      const double expected = ratio * static_cast<double>(data.size());
      const bool trailer_over = data.size() >= 18 && TrailerSize(data) > static_cast<uint64_t>(limit);
      if (ratio > kBombRatio && (expected > 2.0 * static_cast<double>(limit) ||
                                 (trailer_over && expected > static_cast<double>(limit)))) {
        char text[32];
        std::snprintf(text, sizeof(text), "%.0f:1", ratio);
        fail("gzip data would inflate to more than " + OverLimit(limit) + ": " +
                 FormatBytes(static_cast<double>(total)) + " from its first " +
                 FormatBytes(static_cast<double>(consumed)) + " (" + text + ", a decompression bomb's ratio)",
             consumed, kRaiseLimit);
      }
    }
    out.append(buffer, produced);
    if (status == Z_STREAM_END) {
      // gzip allows several members one after the other (`cat a.gz b.gz`):
      // the data is their concatenation. Anything else after a member is
      // refused rather than silently ignored.
      if (stream.avail_in == 0) break;
      const int64_t offset = static_cast<int64_t>(data.size() - stream.avail_in);
      if (!IsGzip(data.substr(static_cast<size_t>(offset)))) {
        fail("data after the end of the gzip stream", offset,
             "the file holds something besides gzip data; re-create or re-download it");
      }
      if (inflateReset(&stream) != Z_OK) fail("zlib reset failed", offset, "");
      continue;
    }
    if (stream.avail_in == 0 && stream.avail_out != 0) {
      fail("gzip data is truncated", static_cast<int64_t>(data.size()), "re-create or re-download the file");
    }
  }
  inflateEnd(&stream);
  return out;
}

std::string Gzip(std::string_view data) {
  z_stream stream{};
  if (deflateInit2(&stream, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw IoError("zlib initialization failed");
  }
  std::string out;
  out.resize(deflateBound(&stream, static_cast<uLong>(data.size())) + 32);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&stream, Z_FINISH);
  deflateEnd(&stream);
  if (status != Z_STREAM_END) throw IoError("gzip compression failed");
  out.resize(stream.total_out);
  return out;
}

std::string ReadFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw IoError(std::string("cannot open file: ") + std::strerror(errno), {path}, "check the path");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw IoError(std::string("cannot read file: ") + std::strerror(err), {path});
  }
  // A device never ends (/dev/zero) or is not data (/dev/full, a terminal).
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) {
    ::close(fd);
    const char* what = S_ISDIR(st.st_mode)                          ? "a folder"
                       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                    : "not a regular file";
    throw IoError(std::string("cannot read it as a file: it is ") + what +
                      (std::filesystem::is_symlink(path) ? " (through a symbolic link)" : ""),
                  {path}, "give the path of a regular file");
  }
  // A pipe has no size: it is read up to the decompression limit.
  const int64_t cap = S_ISREG(st.st_mode) ? -1 : MaxInflatedBytes();
  std::string data;
  if (S_ISREG(st.st_mode)) data.reserve(static_cast<size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw IoError(std::string("read failed: ") + std::strerror(err), {path});
    }
    if (n == 0) break;
    data.append(buffer, static_cast<size_t>(n));
    if (cap >= 0 && static_cast<int64_t>(data.size()) > cap) {
      ::close(fd);
      throw IoError("a pipe gave more than " + OverLimit(cap), {path}, kRaiseLimit);
    }
  }
  ::close(fd);
  if (IsGzip(data)) return Gunzip(data, path);
  return data;
}

bool FileExists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

namespace {

void WriteAll(int fd, std::string_view data, const std::string& path) {
  size_t written = 0;
  while (written < data.size()) {
    const ssize_t n = ::write(fd, data.data() + written, data.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError(std::string("write failed: ") + std::strerror(errno), {path});
    }
    written += static_cast<size_t>(n);
  }
}

void MakeParent(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw IoError("cannot create folder '" + parent.string() + "': " + ec.message(), {path});
}

}  // namespace

void WriteFileAtomic(const std::string& path, std::string_view data) {
  MakeParent(path);
  std::string compressed;
  if (EndsWith(path, ".gz")) {
    compressed = Gzip(data);
    data = compressed;
  }
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw IoError(std::string("cannot create temporary file: ") + std::strerror(errno), {path});
  try {
    WriteAll(fd, data, path);
    if (::fsync(fd) != 0) throw IoError(std::string("fsync failed: ") + std::strerror(errno), {path});
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::fchmod(fd, 0644);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw IoError(std::string("rename failed: ") + std::strerror(err), {path});
  }
}

void AppendLine(const std::string& path, std::string_view line) {
  MakeParent(path);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) throw IoError(std::string("cannot open for append: ") + std::strerror(errno), {path});
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  std::string text(line);
  text += '\n';
  try {
    WriteAll(fd, text, path);
    if (::fsync(fd) != 0 && errno != EINVAL) {
      throw IoError(std::string("fsync failed: ") + std::strerror(errno), {path});
    }
  } catch (...) {
    // A part of the line (a full disk takes what fits) would tear the log.
    if (regular && ::ftruncate(fd, st.st_size) != 0) {
      // Nothing more to do: the reader ignores a torn last line.
    }
    ::close(fd);
    throw;
  }
  ::close(fd);
}

void CheckWritable(const std::string& path, const std::string& option) {
  const auto fail = [&](const std::string& what, const std::string& hint) {
    throw IoError(option + " " + path + ": " + what, {}, hint);
  };
  std::error_code ec;
  if (fs::is_directory(path, ec)) fail("is a folder", "give a file name");
  // The nearest folder that exists: the writer creates the ones below it.
  fs::path folder = fs::path(path).parent_path();
  if (folder.empty()) folder = ".";
  while (!fs::exists(folder, ec) && folder.has_parent_path() && folder.parent_path() != folder) {
    folder = folder.parent_path();
  }
  if (!fs::is_directory(folder, ec)) {
    fail("'" + folder.string() + "' is not a folder", "give a path whose folders are folders");
  }
  // Try it (access(2) says yes to root on a read-only file system).
  std::string probe = (folder / ".gosim_write_check.XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    fail("cannot write in folder '" + folder.string() + "': " + std::strerror(errno),
         "give a path in a writable folder");
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace gosim
