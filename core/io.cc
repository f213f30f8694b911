#include "core/io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

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

std::string Gunzip(std::string_view data, const std::string& name) {
  const int64_t limit = MaxInflatedBytes();
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 32) != Z_OK) throw IoError("zlib initialization failed", {name});
  const auto fail = [&](const std::string& what, int64_t offset, const std::string& hint) {
    inflateEnd(&stream);
    Location where{name};
    where.byte_offset = offset;
    throw IoError(what, where, hint);
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
    if (static_cast<int64_t>(out.size() + produced) > limit) {
      fail("gzip data inflates to more than " + std::to_string(limit) + " bytes (" +
               FormatBytes(static_cast<double>(limit)) + ", the decompression limit)",
           static_cast<int64_t>(data.size() - stream.avail_in),
           "if the file is genuine, raise the limit with the environment variable GOSIM_MAX_INFLATED_BYTES "
           "(in bytes)");
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
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw IoError(std::string("cannot open file: ") + std::strerror(errno), {path}, "check the path");
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  std::string data = buffer.str();
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
  std::string text(line);
  text += '\n';
  try {
    WriteAll(fd, text, path);
    ::fsync(fd);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

}  // namespace gosim
