// Small string utilities shared by the error messages of every module.
#ifndef GOSIM_CORE_STRINGS_H_
#define GOSIM_CORE_STRINGS_H_

#include <string>
#include <string_view>
#include <vector>

namespace gosim {

// Levenshtein distance between two strings.
int EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word` if it is plausibly a typo of it (distance at
// most max(2, |word| / 3)), otherwise "".
std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates);

// " Did you mean 'x'?" or "" when nothing is close.
std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates);

std::string Join(const std::vector<std::string>& parts, std::string_view separator);
std::vector<std::string> Split(std::string_view text, char separator);
bool StartsWith(std::string_view text, std::string_view prefix);
bool EndsWith(std::string_view text, std::string_view suffix);
// Whether `text` contains `needle`, ASCII case ignored.
bool ContainsIgnoreCase(std::string_view text, std::string_view needle);
// `text` as one CSV field: unchanged, or quoted (inner quotes doubled) when
// it holds a comma, a quote or a newline.
std::string CsvField(std::string_view text);

// Human-readable quantities: "1.50 GiB", "3.20 ms", "12.3 TFLOP".
std::string FormatBytes(double bytes);
std::string FormatSeconds(double seconds);
std::string FormatCount(double count, std::string_view unit);

}  // namespace gosim

#endif  // GOSIM_CORE_STRINGS_H_
