#include "core/error.h"

#include <utility>

namespace gosim {

std::string Location::ToString() const {
  std::string out = file;
  if (line > 0) {
    out.append(":").append(std::to_string(line));
    if (column > 0) out.append(":").append(std::to_string(column));
  } else if (byte_offset >= 0) {
    if (!out.empty()) out.append(": ");
    out.append("byte ").append(std::to_string(byte_offset));
  }
  if (!path.empty()) {
    if (!out.empty()) out.append(": ");
    out.append("[").append(path).append("]");
  }
  return out;
}

Error::Error(std::string message, Location where, std::string hint)
    : std::runtime_error(Render(message, where, hint)),
      message_(std::move(message)),
      where_(std::move(where)),
      hint_(std::move(hint)) {}

std::string Error::Render(const std::string& message, const Location& where,
                          const std::string& hint) {
  std::string out = where.ToString();
  if (!out.empty()) out += ": ";
  out += message;
  if (!hint.empty()) out += " (" + hint + ")";
  return out;
}

}  // namespace gosim
