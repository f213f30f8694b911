#include "core/progress.h"

#include <unistd.h>

#include <cstdio>

#include "core/log.h"
#include "core/strings.h"

namespace gosim {

bool ProgressBar::StderrIsTerminal() { return isatty(STDERR_FILENO) == 1; }

ProgressBar::ProgressBar(std::string label, int64_t total, double log_every_s)
    : label_(std::move(label)),
      total_(total),
      log_every_s_(log_every_s),
      terminal_(StderrIsTerminal()),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Add(int64_t units) {
  done_.fetch_add(units, std::memory_order_relaxed);
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_draw_).count();
  if (since < (terminal_ ? 0.1 : log_every_s_)) return;
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock() || finished_) return;
  last_draw_ = now;
  Draw(false);
}

void ProgressBar::SetStatus(const std::string& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  status_ = status;
}

void ProgressBar::Finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_) return;
  finished_ = true;
  Draw(true);
}

void ProgressBar::Draw(bool final_draw) {
  const int64_t done = done_.load(std::memory_order_relaxed);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  char counter[96];
  if (total_ > 0) {
    std::snprintf(counter, sizeof(counter), "%lld/%lld", static_cast<long long>(done),
                  static_cast<long long>(total_));
  } else {
    std::snprintf(counter, sizeof(counter), "%lld", static_cast<long long>(done));
  }
  std::string eta;
  if (total_ > 0 && done > 0 && done < total_) {
    eta = " eta " + FormatSeconds(elapsed * static_cast<double>(total_ - done) / done);
  }
  if (!terminal_) {
    if (done == 0 && final_draw) return;
    GOSIM_LOG(Info) << label_ << ": " << counter << " " << status_ << " (" << FormatSeconds(elapsed)
                    << eta << ")";
    return;
  }
  std::string bar;
  if (total_ > 0) {
    const int width = 30;
    const int filled = static_cast<int>(width * std::min<double>(1.0, double(done) / total_));
    bar = "[" + std::string(filled, '#') + std::string(width - filled, '.') + "] ";
  }
  std::fprintf(stderr, "\r\033[K%s %s%s %s (%s%s)", label_.c_str(), bar.c_str(), counter,
               status_.c_str(), FormatSeconds(elapsed).c_str(), eta.c_str());
  if (final_draw) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

}  // namespace gosim
