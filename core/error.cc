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

std::string Error::Render(const std::string& message, const Location& where, const std::string& hint) {
  std::string out = where.ToString();
  if (!out.empty()) out += ": ";
  out += message;
  if (!hint.empty()) out += " (" + hint + ")";
  return EscapeControl(out);
}

std::string EscapeControl(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == 0xc2 && i + 1 < text.size()) {
      const auto next = static_cast<unsigned char>(text[i + 1]);
      if (next >= 0x80 && next <= 0x9f) {  // a C1 control character, e.g. U+009B (CSI)
        out += "\\u00";
        out += kHex[next >> 4];
        out += kHex[next & 15];
        ++i;
        continue;
      }
    }
    if (c >= 0x20 && c != 0x7f) {
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace gosim
