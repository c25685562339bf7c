// Progress lines and metrics.jsonl.
#include "lib/runtime/metrics.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>

#include "lib/util/atomic_file.h"
#include "lib/util/error.h"

namespace hetu::runtime {
namespace {

std::string human_rate(double per_s) {
  if (per_s >= 1e6) return fmt::format("{:.2f}M", per_s / 1e6);
  if (per_s >= 1e3) return fmt::format("{:.1f}k", per_s / 1e3);
  return fmt::format("{:.0f}", per_s);
}

// The step of a complete metrics line ({"step":N,...}), nullopt for anything else.
std::optional<int64_t> line_step(const std::string& line) {
  constexpr std::string_view prefix = R"({"step":)";
  if (line.size() <= prefix.size() || line.compare(0, prefix.size(), prefix) != 0 || line.back() != '}') return std::nullopt;
  int64_t step = 0;
  size_t i = prefix.size();
  for (; i < line.size() && line[i] >= '0' && line[i] <= '9'; ++i) step = step * 10 + (line[i] - '0');
  if (i == prefix.size() || (line[i] != ',' && line[i] != '}')) return std::nullopt;
  return step;
}

// Keeps the lines of steps <= last_step (atomically rewritten when anything is dropped).
void truncate_after(const std::string& path, int64_t last_step) {
  std::ifstream in(path);
  if (!in) return;
  std::string kept, line;
  bool dropped = false;
  while (std::getline(in, line)) {
    const std::optional<int64_t> step = line_step(line);
    if (step && *step <= last_step) {
      kept += line + "\n";
    } else {
      dropped = true;
    }
  }
  in.close();
  if (dropped) write_file_atomic(path, kept);
}

// JSON numbers cannot be NaN/inf; write null instead.
std::string json_number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

std::string progress_line(const StepMetrics& m) {
  const int width = static_cast<int>(std::to_string(m.total_steps).size());
  std::string line = fmt::format("step {:>{}}/{} | loss {:.4f}", m.step, width, m.total_steps, m.loss);
  if (m.val_loss) line += fmt::format(" | val {:.4f}", *m.val_loss);
  line += fmt::format(" | lr {:.2e} | norm {:.3f} | {} tok/s | MFU {:.1f}%", m.lr, m.grad_norm,
                      human_rate(m.tokens_per_s), 100.0 * m.mfu);
  if (m.loss_scale) line += fmt::format(" | scale {}", *m.loss_scale);
  if (m.skipped) line += " | skipped (inf/nan gradients)";
  if (m.peak_memory_gib) line += fmt::format(" | mem {:.1f} GiB", *m.peak_memory_gib);
  line += fmt::format(" | ETA {}", format_duration(m.eta_seconds));
  return line;
}

std::string metrics_json(const StepMetrics& m) {
  std::string json = fmt::format(R"({{"step":{},"loss":{},"lr":{},"grad_norm":{},"tokens_per_s":{},"mfu":{},"step_s":{})",
                                 m.step, json_number(m.loss), json_number(m.lr), json_number(m.grad_norm),
                                 json_number(m.tokens_per_s), json_number(m.mfu), json_number(m.step_seconds));
  if (m.val_loss) json += fmt::format(R"(,"val_loss":{})", json_number(*m.val_loss));
  if (m.loss_scale) json += fmt::format(R"(,"loss_scale":{})", json_number(*m.loss_scale));
  if (m.skipped) json += R"(,"skipped":true)";
  if (m.peak_memory_gib) json += fmt::format(R"(,"peak_mem_gib":{})", json_number(*m.peak_memory_gib));
  if (m.switch_seconds) json += fmt::format(R"(,"switch_s":{})", json_number(*m.switch_seconds));
  if (m.switch_reshard_seconds) json += fmt::format(R"(,"switch_reshard_s":{})", json_number(*m.switch_reshard_seconds));
  if (!m.time_json.empty()) json += R"(,"time":)" + m.time_json;
  return json + "}";
}

MetricsWriter::MetricsWriter(const std::string& path, int64_t resumed_step) {
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  if (resumed_step > 0) truncate_after(path, resumed_step);
  file_ = std::fopen(path.c_str(), resumed_step > 0 ? "a" : "w");
  HT_CHECK(file_ != nullptr, "cannot open {} for writing", path);
}

MetricsWriter::~MetricsWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void MetricsWriter::write(const StepMetrics& m) {
  const std::string line = metrics_json(m) + "\n";
  std::fputs(line.c_str(), file_);
  std::fflush(file_);
}

}  // namespace hetu::runtime
