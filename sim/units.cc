#include "sim/units.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>
#include <utility>

#include "core/error.h"
#include "core/yaml.h"

namespace gosim::sim {
namespace {

// value = number * mul / div; sub-unit scales divide so that "5 us" is
// exactly the double 5e-6.
struct Scale {
  double mul = 1.0;
  double div = 1.0;
};

// Decimal and binary multipliers in front of a unit. 'k' and 'K' both mean
// 1000 because both spellings are common in datasheets.
std::optional<double> PrefixFactor(std::string_view prefix, bool allow_binary) {
  static constexpr std::pair<std::string_view, double> kDecimal[] = {
      {"", 1.0}, {"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}};
  static constexpr std::pair<std::string_view, double> kBinary[] = {
      {"Ki", 1024.0},
      {"Mi", 1024.0 * 1024.0},
      {"Gi", 1024.0 * 1024.0 * 1024.0},
      {"Ti", 1024.0 * 1024.0 * 1024.0 * 1024.0},
      {"Pi", 1024.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0}};
  for (const auto& [p, f] : kDecimal) {
    if (p == prefix) return f;
  }
  if (allow_binary) {
    for (const auto& [p, f] : kBinary) {
      if (p == prefix) return f;
    }
  }
  return std::nullopt;
}

struct Suffix {
  std::string_view text;
  double div;  // 8 for bits
};

// `unit` = prefix + one of `suffixes`.
std::optional<Scale> SplitUnit(std::string_view unit, std::initializer_list<Suffix> suffixes,
                               bool allow_binary) {
  for (const Suffix& suffix : suffixes) {
    if (unit.size() < suffix.text.size() || unit.substr(unit.size() - suffix.text.size()) != suffix.text)
      continue;
    const std::optional<double> prefix =
        PrefixFactor(unit.substr(0, unit.size() - suffix.text.size()), allow_binary);
    if (prefix) return Scale{*prefix, suffix.div};
  }
  return std::nullopt;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::optional<Scale> UnitScale(std::string_view unit, Quantity kind) {
  if (unit.empty()) return Scale{};
  switch (kind) {
    case Quantity::kBytes:
      return SplitUnit(unit, {{"B", 1.0}}, true);
    case Quantity::kSeconds: {
      static constexpr std::pair<std::string_view, Scale> kTimes[] = {
          {"s", {1.0, 1.0}},  {"sec", {1.0, 1.0}},       {"ms", {1.0, 1e3}},
          {"us", {1.0, 1e6}}, {"\xC2\xB5s", {1.0, 1e6}}, {"\xCE\xBCs", {1.0, 1e6}},
          {"ns", {1.0, 1e9}}, {"min", {60.0, 1.0}},      {"h", {3600.0, 1.0}}};
      for (const auto& [u, scale] : kTimes) {
        if (u == unit) return scale;
      }
      return std::nullopt;
    }
    case Quantity::kBandwidth:
      return SplitUnit(unit, {{"B/s", 1.0}, {"Bps", 1.0}, {"bit/s", 8.0}, {"b/s", 8.0}, {"bps", 8.0}}, true);
    case Quantity::kFlopRate: {
      // The FLOP part is case-insensitive ("TFLOPS", "Tflop/s"); the prefix is not.
      for (std::string_view suffix : {"FLOP/s", "FLOPs/s", "FLOPS"}) {
        if (unit.size() < suffix.size()) continue;
        if (!EqualsIgnoreCase(unit.substr(unit.size() - suffix.size()), suffix)) continue;
        const std::optional<double> prefix = PrefixFactor(unit.substr(0, unit.size() - suffix.size()), false);
        if (prefix) return Scale{*prefix, 1.0};
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

std::string Printf(const char* format, double value, const char* unit) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, value, unit);
  return buffer;
}

std::string FormatDecimal(double value, const char* unit) {
  const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int p = 0;
  double v = value;
  while (std::fabs(v) >= 1000.0 && p < 6) {
    v /= 1000.0;
    ++p;
  }
  const std::string u = std::string(prefixes[p]) + unit;
  return Printf("%.2f %s", v, u.c_str());
}

}  // namespace

std::string_view QuantityName(Quantity kind) {
  switch (kind) {
    case Quantity::kBytes:
      return "a size in bytes";
    case Quantity::kSeconds:
      return "a time in seconds";
    case Quantity::kBandwidth:
      return "a bandwidth in bytes/s";
    case Quantity::kFlopRate:
      return "a compute rate in FLOP/s";
  }
  return "a quantity";
}

std::string_view QuantityExamples(Quantity kind) {
  switch (kind) {
    case Quantity::kBytes:
      return "write e.g. 16 GiB, 40 GB, 512 MiB or a plain number of bytes";
    case Quantity::kSeconds:
      return "write e.g. 5 us, 1.5 ms, 2 ns or a plain number of seconds";
    case Quantity::kBandwidth:
      return "write e.g. 900 GB/s, 16 GiB/s, 200 Gb/s (bits) or a plain number of bytes/s";
    case Quantity::kFlopRate:
      return "write e.g. 15.7 TFLOP/s, 125 TFLOPS or a plain number of FLOP/s";
  }
  return "";
}

bool TryParseQuantity(std::string_view text, Quantity kind, double* value, std::string* error) {
  const std::string_view trimmed = Trim(text);
  std::string_view rest = trimmed;
  if (!rest.empty() && rest.front() == '+') rest.remove_prefix(1);
  double number = 0.0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), number);
  if (ec != std::errc() || end == rest.data()) {
    *error = "'" + std::string(trimmed) + "' is not " + std::string(QuantityName(kind)) + " (no number)";
    return false;
  }
  if (!std::isfinite(number)) {
    *error = "'" + std::string(trimmed) + "' is not a finite number";
    return false;
  }
  const std::string_view unit = Trim(rest.substr(static_cast<size_t>(end - rest.data())));
  const std::optional<Scale> scale = UnitScale(unit, kind);
  if (!scale) {
    *error = "unknown unit '" + std::string(unit) + "' for " + std::string(QuantityName(kind));
    return false;
  }
  *value = number * scale->mul / scale->div;
  return true;
}

double ParseQuantity(std::string_view text, Quantity kind) {
  double value = 0.0;
  std::string error;
  if (!TryParseQuantity(text, kind, &value, &error)) {
    throw ConfigError(error, {}, std::string(QuantityExamples(kind)));
  }
  return value;
}

double YamlQuantity(const YAML::Node& node, Quantity kind, const std::string& file, const std::string& path) {
  if (!node || !node.IsScalar()) {
    throw ConfigError("expected " + std::string(QuantityName(kind)), YamlLocation(node, file, path),
                      std::string(QuantityExamples(kind)));
  }
  double value = 0.0;
  std::string error;
  if (!TryParseQuantity(node.Scalar(), kind, &value, &error)) {
    throw ConfigError(error, YamlLocation(node, file, path), std::string(QuantityExamples(kind)));
  }
  return value;
}

std::string FormatBandwidth(double bytes_per_second) {
  return FormatDecimal(bytes_per_second, "B/s");
}

std::string FormatFlopRate(double flops_per_second) {
  return FormatDecimal(flops_per_second, "FLOP/s");
}

}  // namespace gosim::sim
