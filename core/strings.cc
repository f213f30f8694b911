#include "core/strings.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace gosim {

int EditDistance(std::string_view a, std::string_view b) {
  std::vector<int> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates) {
  const int limit = std::max<int>(2, static_cast<int>(word.size()) / 3);
  int best = limit + 1;
  std::string match;
  for (const auto& c : candidates) {
    const int d = EditDistance(word, c);
    if (d < best) {
      best = d;
      match = c;
    }
  }
  return match;
}

std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string match = ClosestMatch(word, candidates);
  return match.empty() ? std::string() : " Did you mean '" + match + "'?";
}

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += separator;
    out += parts[i];
  }
  return out;
}

std::vector<std::string> Split(std::string_view text, char separator) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t pos = text.find(separator, start);
    out.emplace_back(text.substr(start, pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

bool ContainsIgnoreCase(std::string_view text, std::string_view needle) {
  const auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  return std::search(text.begin(), text.end(), needle.begin(), needle.end(),
                     [&](char a, char b) { return lower(a) == lower(b); }) != text.end();
}

namespace {
std::string Printf(const char* format, double value, const char* unit) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, value, unit);
  return buffer;
}
}  // namespace

std::string FormatBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (std::fabs(bytes) >= 1024.0 && u < 5) {
    bytes /= 1024.0;
    ++u;
  }
  return Printf(u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
}

std::string FormatSeconds(double seconds) {
  const double a = std::fabs(seconds);
  if (a >= 1.0 || a == 0.0) return Printf("%.3f %s", seconds, "s");
  if (a >= 1e-3) return Printf("%.3f %s", seconds * 1e3, "ms");
  if (a >= 1e-6) return Printf("%.3f %s", seconds * 1e6, "us");
  return Printf("%.1f %s", seconds * 1e9, "ns");
}

std::string FormatCount(double count, std::string_view unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P", "E"};
  int p = 0;
  while (std::fabs(count) >= 1000.0 && p < 6) {
    count /= 1000.0;
    ++p;
  }
  const std::string u = std::string(prefixes[p]) + std::string(unit);
  return Printf(p == 0 ? "%.0f %s" : "%.2f %s", count, u.c_str());
}

std::string CsvField(std::string_view text) {
  if (text.find_first_of(",\"\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace gosim
