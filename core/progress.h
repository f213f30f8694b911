// A progress bar for long work, drawn on stderr only when stderr is a
// terminal; otherwise it logs a plain line at most every `log_every_s`
// seconds (and at the end), so CI logs show progress without control codes.
// Thread-safe: Add() may be called from worker threads.
#ifndef GOSIM_CORE_PROGRESS_H_
#define GOSIM_CORE_PROGRESS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace gosim {

class ProgressBar {
 public:
  // `total` units of work (0 = unknown); `label` prefixes the bar.
  ProgressBar(std::string label, int64_t total, double log_every_s = 10.0);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void Add(int64_t units = 1);
  // Extra text after the counter, e.g. "best 12.3 ms".
  void SetStatus(const std::string& status);
  // Draws the final state and a newline; called by the destructor if needed.
  void Finish();

  static bool StderrIsTerminal();

 private:
  void Draw(bool final_draw);

  std::string label_;
  int64_t total_;
  double log_every_s_;
  std::atomic<int64_t> done_{0};
  std::string status_;
  std::mutex mutex_;
  bool terminal_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace gosim

#endif  // GOSIM_CORE_PROGRESS_H_
