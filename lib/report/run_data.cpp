// Reading a run folder for the report. See Note [Prediction hook].
#include "lib/report/run_data.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace hetu::report {
namespace {

// Note [Prediction hook]: the planner (lib/plan) does not write predictions yet. When it
// does, the report shows them next to the measurements if either
//  - a metrics.jsonl line carries "predicted_step_s" (seconds per step, the whole job) and/or
//    "predicted_rank_step_s" ([seconds per step of each rank]), or
//  - config.resolved.toml has a line `predicted_step_s = X` (any table).
// Nothing else needs to change here.

double number_or(const nlohmann::json& j, const char* key, double fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

std::optional<double> optional_number(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Steps a run resumed from, as rank 0's log records them ("resumed from step N"): a resumed
// run drops the metrics lines past its checkpoint (lib/runtime/metrics.h), so metrics.jsonl
// alone shows no repeat; the log is appended to across resumes.
std::vector<int64_t> resumes_in_log(const std::string& dir) {
  std::vector<int64_t> steps;
  std::ifstream log(dir + "/logs/rank-0.log");
  const std::string marker = "resumed from step ";
  for (std::string line; std::getline(log, line);) {
    const size_t at = line.find(marker);
    if (at == std::string::npos) continue;
    try {
      steps.push_back(std::stoll(line.substr(at + marker.size())));
    } catch (const std::exception&) {
    }
  }
  return steps;
}

}  // namespace

RunData load_run(const std::string& dir) {
  RunData run;
  run.dir = dir;
  run.name = std::filesystem::path(dir).lexically_normal().filename().string();
  if (run.name.empty()) run.name = std::filesystem::path(dir).lexically_normal().parent_path().filename().string();
  const std::string metrics_path = dir + "/metrics.jsonl";
  std::ifstream in(metrics_path);
  HT_USAGE_CHECK(in.good(), "report: {} does not exist (is {} a run folder of hetu train?)", metrics_path, dir);

  std::map<int64_t, MetricPoint> by_step;
  std::map<int64_t, nlohmann::json> time_of;
  int64_t previous = 0;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (trim(line).empty()) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      HT_USAGE_ERROR("report: {}:{}: not JSON ({})", metrics_path, line_no, e.what());
    }
    MetricPoint p;
    p.step = j.value("step", int64_t{0});
    p.loss = number_or(j, "loss", NAN);
    p.lr = number_or(j, "lr", NAN);
    p.grad_norm = number_or(j, "grad_norm", NAN);
    p.tokens_per_s = number_or(j, "tokens_per_s", NAN);
    p.mfu = number_or(j, "mfu", NAN);
    p.step_s = number_or(j, "step_s", NAN);
    p.tokens = static_cast<double>(p.step) * p.tokens_per_s * p.step_s;
    p.val_loss = optional_number(j, "val_loss");
    p.predicted_step_s = optional_number(j, "predicted_step_s");
    if (p.step <= previous) run.resumed_after.push_back(p.step - 1);
    previous = p.step;
    if (j.contains("time")) {
      nlohmann::json t = j["time"];
      if (j.contains("predicted_rank_step_s")) t["predicted_rank_step_s"] = j["predicted_rank_step_s"];
      time_of[p.step] = t;
    } else {
      time_of.erase(p.step);
    }
    by_step[p.step] = p;  // a resumed run's repeat of a step replaces the earlier line
  }
  for (const auto& [step, p] : by_step) run.metrics.push_back(p);
  for (int64_t step : resumes_in_log(dir)) {
    if (std::find(run.resumed_after.begin(), run.resumed_after.end(), step) == run.resumed_after.end()) {
      run.resumed_after.push_back(step);
    }
  }
  HT_USAGE_CHECK(!run.metrics.empty(), "report: {} has no logged steps", metrics_path);

  for (auto it = time_of.rbegin(); it != time_of.rend(); ++it) {
    const nlohmann::json& t = it->second;
    if (!t.contains("by_rank")) continue;
    RankTimes r;
    r.step = it->first;
    const nlohmann::json& b = t["by_rank"];
    r.step_s = b.at("step_s").get<std::vector<double>>();
    for (auto field = b.begin(); field != b.end(); ++field) {
      if (field.key() == "step_s") continue;
      r.phases.push_back(field.key());
    }
    // nlohmann's object keeps keys sorted; order the phases as the timer does.
    static const std::vector<std::string> order = {"forward", "backward", "pipe_wait", "tp_comm", "grad_sync",
                                                   "optimizer", "data", "checkpoint", "eval", "other"};
    std::vector<std::string> sorted;
    for (const std::string& name : order)
      if (b.contains(name)) sorted.push_back(name);
    for (const std::string& name : r.phases)
      if (std::find(order.begin(), order.end(), name) == order.end()) sorted.push_back(name);
    r.phases = sorted;
    r.seconds.assign(r.step_s.size(), std::vector<double>(r.phases.size(), 0.0));
    for (size_t k = 0; k < r.phases.size(); ++k) {
      const std::vector<double> v = b.at(r.phases[k]).get<std::vector<double>>();
      for (size_t rank = 0; rank < v.size() && rank < r.seconds.size(); ++rank) r.seconds[rank][k] = v[rank];
    }
    if (t.contains("predicted_rank_step_s")) r.predicted_step_s = t["predicted_rank_step_s"].get<std::vector<double>>();
    run.times = std::move(r);
    break;
  }

  const std::string trace_path = dir + "/trace/trace.json";
  if (std::filesystem::exists(trace_path)) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(read_text(trace_path));
    } catch (const nlohmann::json::exception& e) {
      HT_USAGE_ERROR("report: {}: not JSON ({})", trace_path, e.what());
    }
    for (const nlohmann::json& e : j.at("traceEvents")) {
      const std::string ph = e.value("ph", "");
      const int64_t pid = e.value("pid", int64_t{0});
      if (ph == "M" && e.value("name", "") == "process_name") {
        if (run.rank_labels.size() <= static_cast<size_t>(pid)) run.rank_labels.resize(static_cast<size_t>(pid) + 1);
        run.rank_labels[static_cast<size_t>(pid)] = e["args"].value("name", "");
      }
      if (ph != "X") continue;
      run.trace.push_back({pid, e.value("tid", int64_t{0}), e.contains("args") ? e["args"].value("step", int64_t{0}) : 0,
                           e.value("name", ""), e.value("ts", 0.0), e.value("dur", 0.0)});
    }
  }

  const std::string config = read_text(dir + "/config.resolved.toml");
  bool in_job = false;
  for (std::string_view line : split(config, '\n')) {
    line = trim(line);
    if (!line.empty() && line.front() == '[') in_job = line == "[job]";
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = trim(line.substr(0, eq));
    std::string_view value = trim(line.substr(eq + 1));
    if (in_job && key == "name" && value.size() >= 2 && value.front() == '"') {
      run.name = std::string(value.substr(1, value.find('"', 1) - 1)) + " (" + run.name + ")";
    }
    if (key == "predicted_step_s") {
      try {
        run.predicted_step_s = std::stod(std::string(value));
      } catch (const std::exception&) {
        HT_USAGE_ERROR("report: {}/config.resolved.toml: predicted_step_s is not a number: {}", dir, value);
      }
    }
  }
  return run;
}

}  // namespace hetu::report
