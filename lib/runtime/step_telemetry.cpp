// Per-rank timings across ranks and trace files. See step_telemetry.h.
#include "lib/runtime/step_telemetry.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lib/util/atomic_file.h"
#include "lib/util/error.h"

namespace hetu::runtime {
namespace {

std::string json_number(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : "null"; }

std::string stat_json(const TimingSummary::Stat& s) {
  return fmt::format(R"({{"min":{},"max":{},"mean":{},"slowest":{}}})", json_number(s.min), json_number(s.max),
                     json_number(s.mean), s.slowest);
}

TimingSummary::Stat stat_of(const std::vector<double>& v) {
  TimingSummary::Stat s{v[0], v[0], 0, 0};
  for (size_t r = 0; r < v.size(); ++r) {
    s.min = std::min(s.min, v[r]);
    if (v[r] > s.max) s.max = v[r], s.slowest = static_cast<int64_t>(r);
    s.mean += v[r] / static_cast<double>(v.size());
  }
  return s;
}

// For tests (docs/config.md, "Seeing a run"): HETU_DEBUG_SLOW_FORWARD="RANK:SECONDS" makes
// every forward of that rank sleep, a slow pipeline stage.
void apply_debug_slowdown(int64_t rank) {
  const char* v = std::getenv("HETU_DEBUG_SLOW_FORWARD");
  if (v == nullptr) return;
  const std::string text(v);
  const size_t colon = text.find(':');
  HT_CHECK(colon != std::string::npos, "HETU_DEBUG_SLOW_FORWARD: expected RANK:SECONDS, got \"{}\"", text);
  if (std::stoll(text.substr(0, colon)) == rank) timing::set_forward_delay(std::stod(text.substr(colon + 1)));
}

std::string trace_event_json(const timing::TraceEvent& e, int64_t pid) {
  const char* cat = e.track == timing::Track::compute ? "compute" : "comm";
  return fmt::format(R"({{"name":"{}","cat":"{}","ph":"X","ts":{:.3f},"dur":{:.3f},"pid":{},"tid":{},"args":{{"step":{}{}{}}}}})",
                     e.name, cat, e.start_us, e.duration_us, pid, static_cast<int>(e.track), e.step,
                     e.args.empty() ? "" : ",", e.args);
}

}  // namespace

TimingSummary summarize_timings(const std::vector<double>& values, int64_t ranks) {
  constexpr int64_t k = StepTelemetry::kFields;
  HT_CHECK(static_cast<int64_t>(values.size()) == ranks * k, "timings: {} values for {} ranks", values.size(), ranks);
  TimingSummary out;
  out.ranks = ranks;
  auto column = [&](auto field) {
    std::vector<double> v(static_cast<size_t>(ranks));
    for (int64_t r = 0; r < ranks; ++r) v[static_cast<size_t>(r)] = field(&values[static_cast<size_t>(r * k)]);
    return v;
  };
  out.step = stat_of(column([](const double* row) { return row[0]; }));
  out.compute = stat_of(column([](const double* row) {
    return row[1 + static_cast<int>(timing::Phase::forward)] + row[1 + static_cast<int>(timing::Phase::backward)];
  }));
  for (int p = 0; p < timing::kNumPhases; ++p) out.phases.push_back(stat_of(column([p](const double* row) { return row[1 + p]; })));
  for (int64_t r = 0; r < ranks; ++r) {
    out.by_rank.emplace_back(values.begin() + r * k, values.begin() + (r + 1) * k);
  }
  return out;
}

std::string timing_json(const TimingSummary& s) {
  const std::vector<double>& slow = s.by_rank[static_cast<size_t>(s.compute.slowest)];
  std::string json = fmt::format(R"({{"ranks":{},"step_s":{},"compute":{},"straggler":{{"rank":{},"compute_share":{}}})",
                                 s.ranks, stat_json(s.step), stat_json(s.compute), s.compute.slowest,
                                 json_number(slow[0] > 0 ? s.compute.max / slow[0] : 0));
  for (int p = 0; p < timing::kNumPhases; ++p) {
    json += fmt::format(R"(,"{}":{})", timing::phase_name(static_cast<timing::Phase>(p)), stat_json(s.phases[static_cast<size_t>(p)]));
  }
  if (s.ranks <= kMaxRanksListed) {
    json += R"(,"by_rank":{)";
    for (int64_t f = 0; f < StepTelemetry::kFields; ++f) {
      json += fmt::format(R"({}"{}":[)", f == 0 ? "" : ",", f == 0 ? "step_s" : timing::phase_name(static_cast<timing::Phase>(f - 1)));
      for (int64_t r = 0; r < s.ranks; ++r) {
        json += (r == 0 ? "" : ",") + json_number(s.by_rank[static_cast<size_t>(r)][static_cast<size_t>(f)]);
      }
      json += "]";
    }
    if (!s.peak_mem_gib.empty()) {
      json += R"(,"peak_mem_gib":[)";
      for (size_t r = 0; r < s.peak_mem_gib.size(); ++r) json += (r == 0 ? "" : ",") + json_number(s.peak_mem_gib[r]);
      json += "]";
    }
    json += "}";
  }
  return json + "}";
}

std::string timing_line(const std::vector<double>& v) {
  std::string line = fmt::format("time/step {:.4f}s", v[0]);
  for (int p = 0; p < timing::kNumPhases; ++p) {
    const double t = v[static_cast<size_t>(1 + p)];
    if (t <= 0) continue;
    line += fmt::format(" | {} {:.4f} ({:.0f}%)", timing::phase_name(static_cast<timing::Phase>(p)), t,
                        v[0] > 0 ? 100 * t / v[0] : 0.0);
  }
  return line;
}

StepTelemetry::StepTelemetry(TelemetryOptions options) : options_(std::move(options)) {
  if (options_.comm != nullptr) {
    rank_ = options_.comm->rank();
    world_ = options_.comm->world_size();
  }
  apply_debug_slowdown(rank_);
  timing::take_totals();  // the first window starts here
  timing::take_events();
}

StepTelemetry::Step::Step(StepTelemetry& owner, int64_t number, int64_t last)
    : owner_(owner), number_(number), last_(last) {
  timing::set_step(number);
  timing::set_tracing(number >= owner_.options_.trace_first && number <= owner_.options_.trace_last);
}

StepTelemetry::Step::~Step() {
  const bool traced = timing::tracing();
  timing::set_tracing(false);
  // Writing the trace synchronises the ranks; never while an error unwinds one of them.
  const bool range_done = number_ == owner_.options_.trace_last || number_ == last_;
  if (traced && range_done && std::uncaught_exceptions() == 0) owner_.write_trace();
}

std::string StepTelemetry::collect(int64_t steps, double peak_mem_gib) {
  const timing::Totals t = timing::take_totals();
  const double per = 1.0 / static_cast<double>(std::max<int64_t>(steps, 1));
  std::vector<double> mine(static_cast<size_t>(kFields));
  mine[0] = t.wall * per;
  for (int p = 0; p < timing::kNumPhases; ++p) mine[static_cast<size_t>(1 + p)] = t.seconds[static_cast<size_t>(p)] * per;
  spdlog::info("{}", timing_line(mine));
  // One all_reduce: every rank's fields, then every rank's peak memory.
  std::vector<double> all(static_cast<size_t>(world_ * (kFields + 1)), 0.0);
  std::copy(mine.begin(), mine.end(), all.begin() + rank_ * kFields);
  all[static_cast<size_t>(world_ * kFields + rank_)] = peak_mem_gib;
  if (options_.comm != nullptr && world_ > 1) {
    Tensor buffer = tensor_from(all, {world_ * (kFields + 1)});
    options_.comm->all_reduce(buffer, options_.comm->world());
    all = to_vector(buffer);
  }
  const std::vector<double> peaks(all.begin() + world_ * kFields, all.end());
  all.resize(static_cast<size_t>(world_ * kFields));
  TimingSummary summary = summarize_timings(all, world_);
  if (peak_mem_gib >= 0) summary.peak_mem_gib = peaks;
  return timing_json(summary);
}

// Each rank writes its events; after one all_reduce (every file is complete) rank 0 joins
// them into trace.json. Files hold one event per line between a fixed first and last line,
// so joining is concatenation.
void StepTelemetry::write_trace() {
  if (trace_written_ || options_.out_dir.empty()) return;
  trace_written_ = true;
  const std::string dir = options_.out_dir + "/trace";
  std::filesystem::create_directories(dir);
  std::vector<std::string> lines = {
      fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"args":{{"name":"{}"}}}})", rank_,
                  options_.rank_label.empty() ? fmt::format("rank {}", rank_) : options_.rank_label),
      fmt::format(R"({{"name":"process_sort_index","ph":"M","pid":{},"args":{{"sort_index":{}}}}})", rank_, rank_),
      fmt::format(R"({{"name":"thread_name","ph":"M","pid":{},"tid":0,"args":{{"name":"compute"}}}})", rank_),
      fmt::format(R"({{"name":"thread_name","ph":"M","pid":{},"tid":1,"args":{{"name":"communication"}}}})", rank_)};
  for (const timing::TraceEvent& e : timing::take_events()) lines.push_back(trace_event_json(e, rank_));
  std::string body;
  for (size_t i = 0; i < lines.size(); ++i) body += lines[i] + (i + 1 < lines.size() ? ",\n" : "\n");
  write_file_atomic(fmt::format("{}/rank-{}.json", dir, rank_), "{\"traceEvents\":[\n" + body + "],\"displayTimeUnit\":\"ms\"}\n");
  if (options_.comm != nullptr && world_ > 1) {
    Tensor done = tensor_from(std::vector<double>{1.0}, {1});
    options_.comm->all_reduce(done, options_.comm->world());
  }
  if (rank_ != 0) return;
  std::string merged;
  for (int64_t r = 0; r < world_; ++r) {
    std::ifstream in(fmt::format("{}/rank-{}.json", dir, r));
    if (!in) {
      spdlog::warn("trace: {}/rank-{}.json is missing (out_dir not shared?); trace.json lacks that rank", dir, r);
      continue;
    }
    std::string line;
    std::getline(in, line);  // {"traceEvents":[
    while (std::getline(in, line) && line.rfind("]", 0) != 0) {
      if (!line.empty() && line.back() != ',') line += ',';
      merged += line + "\n";
    }
  }
  if (!merged.empty()) merged.erase(merged.size() - 2, 1);  // the last comma
  write_file_atomic(dir + "/trace.json", "{\"traceEvents\":[\n" + merged + "],\"displayTimeUnit\":\"ms\"}\n");
  spdlog::info("trace: {}/trace.json (open in https://ui.perfetto.dev or chrome://tracing)", dir);
}

}  // namespace hetu::runtime
