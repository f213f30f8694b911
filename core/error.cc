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

namespace {

// The length of the well-formed UTF-8 sequence that starts `text` (a lead
// byte of 0x80 or above), or 0 when it is not one (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF).
size_t Utf8Length(std::string_view text) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = at(0);
  size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) {
    length = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    length = 3;
    if (c == 0xe0) low = 0xa0;
    if (c == 0xed) high = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    length = 4;
    if (c == 0xf0) low = 0x90;
    if (c == 0xf4) high = 0x8f;
  } else {
    return 0;
  }
  if (text.size() < length || at(1) < low || at(1) > high) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (at(k) < 0x80 || at(k) > 0xbf) return 0;
  }
  return length;
}

}  // namespace

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
    if (c >= 0x80) {  // a UTF-8 sequence is kept whole; a byte of none is written \xNN
      const size_t length = Utf8Length(text.substr(i));
      if (length > 0) {
        out.append(text.substr(i, length));
        i += length - 1;
        continue;
      }
    }
    if (c >= 0x20 && c < 0x80 && c != 0x7f) {
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
