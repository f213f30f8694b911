// Physical quantities in configuration files: a plain number in SI base units
// (bytes, seconds, bytes/s, FLOP/s) or a number with a readable unit.
//
//   bytes       B, kB/KB, MB, GB, TB, PB (powers of 1000); KiB, MiB, GiB, TiB,
//               PiB (powers of 1024)
//   seconds     s, ms, us (also µs), ns, min, h
//   bandwidth   any byte unit + "/s" ("900 GB/s", "16 GiB/s"), or bits:
//               b/s, bit/s, kb/s, Mb/s, Gb/s, Tb/s, Gbit/s, Gbps ("200 Gb/s"
//               is 25e9 bytes/s); units are case-sensitive because B != b
//   FLOP rate   FLOP/s, FLOPS, kFLOP/s ... PFLOP/s ("15.7 TFLOP/s")
//
// A space between number and unit is optional. Unknown units, a missing
// number and non-finite values are errors.
#ifndef GOSIM_SIM_UNITS_H_
#define GOSIM_SIM_UNITS_H_

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

namespace gosim::sim {

enum class Quantity { kBytes, kSeconds, kBandwidth, kFlopRate };

// "a size in bytes", "a time in seconds", ... for messages.
std::string_view QuantityName(Quantity kind);
// Examples of valid spellings, for hints.
std::string_view QuantityExamples(Quantity kind);

// Parses `text` as a `kind` in SI base units. Returns false and sets `error`
// (what is wrong, without location) on failure; never throws.
bool TryParseQuantity(std::string_view text, Quantity kind, double* value, std::string* error);
// The same, throwing a ConfigError (without location) on failure.
double ParseQuantity(std::string_view text, Quantity kind);
// A YAML scalar (number or string with unit); a ConfigError naming `file`,
// the node's line and `path` on failure.
double YamlQuantity(const YAML::Node& node, Quantity kind, const std::string& file, const std::string& path);

// "900.0 GB/s", "15.70 TFLOP/s" (decimal prefixes).
std::string FormatBandwidth(double bytes_per_second);
std::string FormatFlopRate(double flops_per_second);

}  // namespace gosim::sim

#endif  // GOSIM_SIM_UNITS_H_
