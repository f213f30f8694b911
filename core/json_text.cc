#include "core/json_text.h"

#include <algorithm>

namespace gosim {

Location TextLocation(std::string_view text, size_t offset, const std::string& file) {
  offset = std::min(offset, text.size());
  Location where(file, 1, 1);
  size_t line_start = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++where.line;
      line_start = i + 1;
    }
  }
  where.column = static_cast<int>(offset - line_start) + 1;
  where.byte_offset = static_cast<int64_t>(offset);
  return where;
}

size_t NumberStart(std::string_view text, size_t read) {
  const auto in_number = [](char c) {
    return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-';
  };
  size_t at = std::min(read, text.size());
  if (at > 0 && !in_number(text[at - 1])) --at;
  while (at > 0 && in_number(text[at - 1])) --at;
  return at;
}

std::string JsonErrorText(const std::string& what) {
  std::string out = what;
  if (out.rfind("[json.exception.", 0) == 0) {
    const size_t close = out.find("] ");
    if (close != std::string::npos) out = out.substr(close + 2);
  }
  const size_t column = out.find("column");
  if (out.rfind("parse error", 0) == 0 && column != std::string::npos) {
    const size_t colon = out.find(": ", column);
    if (colon != std::string::npos) out = out.substr(colon + 2);
  }
  return out;
}

void JsonKeyTracker::Open() {
  if (depth_ == levels_.size()) levels_.emplace_back();
  Level& level = levels_[depth_++];
  level.few.clear();
  level.many.clear();
}

void JsonKeyTracker::Close() {
  if (depth_ > 0) --depth_;
}

bool JsonKeyTracker::Add(const std::string& key) {
  if (depth_ == 0) return true;
  Level& level = levels_[depth_ - 1];
  if (!level.many.empty()) return level.many.insert(key).second;
  if (std::find(level.few.begin(), level.few.end(), key) != level.few.end()) return false;
  if (level.few.size() < kFew) {
    level.few.push_back(key);
    return true;
  }
  level.many.insert(level.few.begin(), level.few.end());
  level.many.insert(key);
  return true;
}

size_t KeyStart(std::string_view text, size_t read) {
  // The lexer has read the key's closing quote (and maybe one byte more).
  size_t end = std::min(read, text.size());
  while (end > 0 && text[end - 1] != '"') --end;
  if (end < 2) return 0;
  size_t at = end - 2;
  while (at > 0 && !(text[at] == '"' && text[at - 1] != '\\')) --at;
  return at;
}

std::string DuplicateKeyMessage(const std::string& key) {
  std::string shown = key.size() > 60 ? key.substr(0, 60) + "..." : key;
  return "key \"" + shown + "\" appears twice in one object";
}

}  // namespace gosim
