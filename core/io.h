// File helpers: whole-file reads with transparent gzip, and atomic writes.
//
// Results, checkpoints and decisions are written with WriteFileAtomic: the
// data goes to a temporary file in the same folder, is flushed and fsync'd,
// then renamed over the target, so an interrupted run never leaves a
// half-written file behind.
#ifndef GOSIM_CORE_IO_H_
#define GOSIM_CORE_IO_H_

#include <string>
#include <string_view>

namespace gosim {

// Reads a whole file; if it starts with the gzip magic bytes it is inflated.
// Throws IoError (missing file) or the given error kind for corrupt gzip.
std::string ReadFile(const std::string& path);
// True when `data` begins with the gzip magic bytes.
bool IsGzip(std::string_view data);
// Inflates gzip data; `name` is used in error messages. Throws IoError.
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
