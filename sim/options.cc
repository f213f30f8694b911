#include "sim/options.h"

namespace gosim::sim {

std::string_view ScheduleName(Schedule schedule) {
  switch (schedule) {
    case Schedule::kStreaming:
      return "streaming";
    case Schedule::kGPipe:
      return "gpipe";
    case Schedule::k1F1B:
      return "1f1b";
  }
  return "?";
}

std::optional<Schedule> ParseSchedule(std::string_view text) {
  if (text == "streaming") return Schedule::kStreaming;
  if (text == "gpipe") return Schedule::kGPipe;
  if (text == "1f1b") return Schedule::k1F1B;
  return std::nullopt;
}

std::string_view ExecutionName(Execution execution) {
  switch (execution) {
    case Execution::kAuto:
      return "auto";
    case Execution::kNone:
      return "none";
    case Execution::kEager:
      return "eager";
    case Execution::kGraph:
      return "graph";
    case Execution::kCaptured:
      return "captured";
  }
  return "?";
}

std::string_view ProcessesName(Processes processes) {
  switch (processes) {
    case Processes::kAuto:
      return "auto";
    case Processes::kOne:
      return "one";
    case Processes::kPerDevice:
      return "per_device";
  }
  return "?";
}

std::optional<Execution> ParseExecution(std::string_view text) {
  for (const Execution e :
       {Execution::kAuto, Execution::kNone, Execution::kEager, Execution::kGraph, Execution::kCaptured}) {
    if (text == ExecutionName(e)) return e;
  }
  return std::nullopt;
}

std::optional<Processes> ParseProcesses(std::string_view text) {
  for (const Processes p : {Processes::kAuto, Processes::kOne, Processes::kPerDevice}) {
    if (text == ProcessesName(p)) return p;
  }
  return std::nullopt;
}

}  // namespace gosim::sim
