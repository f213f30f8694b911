#include "core/io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
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

std::string Gunzip(std::string_view data, const std::string& name) {
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 32) != Z_OK) throw IoError("zlib initialization failed", {name});
  std::string out;
  char buffer[1 << 16];
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof(buffer);
    status = inflate(&stream, Z_NO_FLUSH);
    if (status != Z_OK && status != Z_STREAM_END) {
      const int64_t offset = static_cast<int64_t>(stream.total_in);
      inflateEnd(&stream);
      Location where{name};
      where.byte_offset = offset;
      throw IoError(status == Z_BUF_ERROR ? "gzip data is truncated" : "gzip data is corrupt", where,
                    "re-create or re-download the file");
    }
    out.append(buffer, sizeof(buffer) - stream.avail_out);
    if (status == Z_OK && stream.avail_in == 0 && stream.avail_out != 0) {
      inflateEnd(&stream);
      Location where{name};
      where.byte_offset = static_cast<int64_t>(data.size());
      throw IoError("gzip data is truncated", where, "re-create or re-download the file");
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
    throw IoError(std::string("cannot open file: ") + std::strerror(errno), {path},
                  "check the path");
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
