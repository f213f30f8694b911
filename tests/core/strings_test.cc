#include "core/strings.h"

#include <doctest/doctest.h>

namespace gosim {

TEST_CASE("EditDistance") {
  CHECK(EditDistance("", "") == 0);
  CHECK(EditDistance("kitten", "sitting") == 3);
  CHECK(EditDistance("budget", "budgte") == 2);
}

TEST_CASE("DidYouMean suggests only close candidates") {
  CHECK(DidYouMean("bugdet", {"budget", "seed", "agents"}) == " Did you mean 'budget'?");
  CHECK(DidYouMean("zzzzzz", {"budget", "seed"}).empty());
}

TEST_CASE("Split, Join, StartsWith, EndsWith") {
  CHECK(Split("a.b..c", '.') == std::vector<std::string>{"a", "b", "", "c"});
  CHECK(Join({"x", "y", "z"}, ", ") == "x, y, z");
  CHECK(StartsWith("graph.json.gz", "graph"));
  CHECK(EndsWith("graph.json.gz", ".gz"));
  CHECK_FALSE(EndsWith("gz", ".json.gz"));
}

TEST_CASE("Formatting of quantities") {
  CHECK(FormatBytes(512) == "512 B");
  CHECK(FormatBytes(1536) == "1.50 KiB");
  CHECK(FormatSeconds(0.0032) == "3.200 ms");
  CHECK(FormatSeconds(2.5) == "2.500 s");
  CHECK(FormatCount(12300000, "FLOP") == "12.30 MFLOP");
}

}  // namespace gosim
