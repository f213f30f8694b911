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
// A folder or a device (/dev/zero, /dev/full: endless) is refused at once;
// a pipe (`--cluster <(zcat c.yaml.gz)`) is read up to MaxInflatedBytes().
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
// MaxInflatedBytes() throw IoError with the byte offset. A decompression
// bomb stops early: as soon as, past 32 MiB of output, the data has inflated
// more than 500 times the compressed bytes read so far (deflate reaches
// 1032 on repeated bytes; the committed graphs and traces 13-30) at a rate
// that would pass the limit while the gzip trailer (ISIZE, the last
// member's size mod 2^32) is above it too, or at a rate that would pass
// twice the limit. A file that inflates to the limit or less is read.
std::string Gunzip(std::string_view data, const std::string& name);
// Deflates to gzip format (level 6).
std::string Gzip(std::string_view data);

// Writes `data` to `path` atomically (temp file + fsync + rename). If the path
// ends in ".gz" the data is gzip-compressed. Creates parent folders.
void WriteFileAtomic(const std::string& path, std::string_view data);
// Appends one line (a '\n' is added) and fsyncs; used for JSON-lines logs.
// A failed write (a full disk) cuts the file back to its size before the
// call and throws IoError: the file never ends in part of a line.
void AppendLine(const std::string& path, std::string_view line);

// Throws IoError when a file cannot be created at `path`: it is a folder,
// or the folder it would go in (or the nearest existing one above it,
// where the writer creates the rest) is not a folder or not writable. For
// commands that write their output after long work (`optimize --out`), to
// fail before that work. `option` names the flag in the error (e.g. "--out").
void CheckWritable(const std::string& path, const std::string& option);

bool FileExists(const std::string& path);

}  // namespace gosim

#endif  // GOSIM_CORE_IO_H_
