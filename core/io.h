// File helpers: whole-file reads with transparent gzip, and atomic writes.
//
// Results, checkpoints and decisions are written with WriteFileAtomic: the
// data goes to a temporary file in the same folder, is flushed and fsync'd,
// then renamed over the target, so an interrupted run never leaves a
// half-written file behind.
#ifndef GOSIM_CORE_IO_H_
#define GOSIM_CORE_IO_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace gosim {

// Reads a whole file; if it starts with the gzip magic bytes it is inflated.
// Throws IoError (missing file, corrupt gzip, over the decompression limit).
std::string ReadFile(const std::string& path);
// True when `data` begins with the gzip magic bytes.
bool IsGzip(std::string_view data);

// The most bytes that Gunzip produces, so that a small file that inflates to
// gigabytes (a "zip bomb") fails at once with one line instead of exhausting
// memory: 1 GiB, or the environment variable GOSIM_MAX_INFLATED_BYTES (a
// positive number of bytes; anything else is a ConfigError).
inline constexpr int64_t kDefaultMaxInflatedBytes = int64_t{1} << 30;
int64_t MaxInflatedBytes();
// Inflates gzip data; `name` is used in error messages. Several gzip members
// one after the other inflate to their concatenation (as `gzip -d` does); any
// other data after a member, truncated or corrupt data and output beyond
// MaxInflatedBytes() throw IoError with the byte offset.
std::string Gunzip(std::string_view data, const std::string& name);
// Deflates to gzip format (level 6).
std::string Gzip(std::string_view data);

// Writes `data` to `path` atomically (temp file + fsync + rename). If the path
// ends in ".gz" the data is gzip-compressed. Creates parent folders.
void WriteFileAtomic(const std::string& path, std::string_view data);
// Appends one line (a '\n' is added) and fsyncs; used for JSON-lines logs.
void AppendLine(const std::string& path, std::string_view line);

bool FileExists(const std::string& path);

}  // namespace gosim

#endif  // GOSIM_CORE_IO_H_
