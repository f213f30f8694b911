// Pre-training cost (experiments/pretrain.h): which agents have one, the
// sidecar of a committed checkpoint, a training run's curves.csv, and
// "unknown" rather than a silent 0.
#include "experiments/pretrain.h"

#include <doctest/doctest.h>

#include <string>

#include "core/error.h"
#include "core/io.h"
#include "experiments/cells.h"
#include "tests/experiments/test_util.h"

namespace gosim::experiments {
namespace {

using testing::TempDir;

TEST_CASE("Only an agent that starts from a checkpoint has a pre-training cost") {
  CHECK(FindPretrainCost("brkga", nlohmann::json::object()).evaluations == 0);
  CHECK(FindPretrainCost("hrl", nlohmann::json::object()).evaluations == 0);
  CHECK(FindPretrainCost("go", {{"preset", "paper"}}).evaluations == 0);              // fresh network
  CHECK(FindPretrainCost("go", {{"checkpoint", ""}}).evaluations == 0);               // fresh network
  CHECK(FindPretrainCost("go", {{"checkpoint", "no/such.pt"}}).evaluations == -1);    // not trained yet
  CHECK(FindPretrainCost("brkga", {{"checkpoint", "no/such.pt"}}).evaluations == 0);  // not a learned agent
}

TEST_CASE("The committed checkpoints' sidecars match their files and give the trainers' counts") {
  // The counts are the `evaluations` scalar each trainer saved in the file
  // (configs/checkpoints/README.md); a retrained file without a new sidecar
  // fails here instead of reporting the old count.
  const PretrainCost go = FindPretrainCost("go", {{"checkpoint", "configs/checkpoints/go.pt"}});
  CHECK_MESSAGE(go.evaluations == 2304, go.source);
  CHECK(go.source.find("sidecar") == 0);
  // GO without a checkpoint option loads the committed network too (it
  // reported 0, "no checkpoint", before).
  CHECK(FindPretrainCost("go", nlohmann::json::object()).evaluations == 2304);
  // REGAL without a checkpoint option loads its committed policy.
  const PretrainCost regal = FindPretrainCost("regal", nlohmann::json::object());
  CHECK_MESSAGE(regal.evaluations == 876000, regal.source);
}

TEST_CASE("A training run folder gives the last evaluations of its curves; a stale sidecar gives unknown") {
  TempDir dir;
  WriteFileAtomic(dir / "checkpoint.pt", "weights v1");
  WriteFileAtomic(dir / "curves.csv",
                  "step,reward,best_objective,wall_seconds,evaluations\n1,0.1,2.0,1.5,8\n2,0.2,1.9,3.0,16\n"
                  "3,0.3,1.8,4.5,24\n");
  const nlohmann::json options = {{"checkpoint", dir / "checkpoint.pt"}};
  CHECK(FindPretrainCost("go", options).evaluations == 24);
  CHECK(FindPretrainCost("go", {{"checkpoint", dir / "best.pt"}}).evaluations == -1);  // no such file

  // A sidecar wins over the curves while its digest is the file's.
  WriteFileAtomic(dir / "checkpoint.pt.json", nlohmann::json{{"pretrain_evaluations", 5000},
                                                             {"checkpoint_digest", HashHex("weights v1")},
                                                             {"source", "test"}}
                                                  .dump());
  CHECK(FindPretrainCost("go", options).evaluations == 5000);
  WriteFileAtomic(dir / "checkpoint.pt", "weights v2");  // retrained: the sidecar is stale
  const PretrainCost stale = FindPretrainCost("go", options);
  CHECK(stale.evaluations == -1);
  CHECK(stale.source.find("stale") == 0);

  WriteFileAtomic(dir / "checkpoint.pt.json", "{\"pretrain_evaluations\": \"many\"}");
  CHECK_THROWS_AS(FindPretrainCost("go", options), StateError);
  WriteFileAtomic(dir / "checkpoint.pt.json", "{not json");
  CHECK_THROWS_AS(FindPretrainCost("go", options), StateError);
}

TEST_CASE("FormatPretrain groups thousands and shows unknown as ?") {
  CHECK(FormatPretrain(0) == "0");
  CHECK(FormatPretrain(2304) == "2,304");
  CHECK(FormatPretrain(876000) == "876,000");
  CHECK(FormatPretrain(1234567) == "1,234,567");
  CHECK(FormatPretrain(-1) == "?");
}

}  // namespace
}  // namespace gosim::experiments
