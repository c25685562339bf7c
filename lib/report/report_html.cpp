// Charts and the HTML page of `hetu report` (report_html.h).
#include "lib/report/report_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "lib/report/svg_chart.h"

namespace hetu::report {
namespace {

using Field = std::function<std::optional<double>(const MetricPoint&)>;

LineChart metric_chart(const std::vector<RunData>& runs, std::string id, std::string title, std::string x_label,
                       std::string y_label, const Field& x, const Field& y) {
  LineChart c{std::move(id), std::move(title), std::move(x_label), std::move(y_label), {}};
  for (size_t r = 0; r < runs.size(); ++r) {
    Series s{runs[r].name, {}, false, false, static_cast<int>(r)};
    for (const MetricPoint& p : runs[r].metrics) {
      const std::optional<double> vx = x(p), vy = y(p);
      if (vx && vy && std::isfinite(*vx) && std::isfinite(*vy)) s.points.emplace_back(*vx, *vy);
    }
    s.markers = s.points.size() <= 3;
    if (!s.points.empty()) c.series.push_back(std::move(s));
  }
  return c;
}

// Training loss (solid) and validation loss (dashed, dots) of every run against `x`.
LineChart loss_chart(const std::vector<RunData>& runs, std::string id, std::string x_label, const Field& x) {
  const std::string title = "Loss by " + x_label;
  LineChart c = metric_chart(runs, std::move(id), title, std::move(x_label), "loss", x,
                             [](const MetricPoint& p) { return std::optional<double>(p.loss); });
  for (Series& s : c.series) s.label = "train: " + s.label;
  for (size_t r = 0; r < runs.size(); ++r) {
    Series v{"val: " + runs[r].name, {}, true, true, static_cast<int>(r)};
    for (const MetricPoint& p : runs[r].metrics) {
      if (p.val_loss) v.points.emplace_back(*x(p), *p.val_loss);
    }
    if (!v.points.empty()) c.series.push_back(std::move(v));
  }
  return c;
}

StackedBars time_chart(const RunData& run, size_t index) {
  const RankTimes& t = *run.times;
  StackedBars c{fmt::format("time_{}", index), fmt::format("Time per step by rank: {} (step {})", run.name, t.step),
                "seconds per step", t.phases, {}, ""};
  for (size_t rank = 0; rank < t.seconds.size(); ++rank) {
    Bar b{fmt::format("rank {}", rank), t.seconds[rank], std::nullopt};
    if (rank < t.predicted_step_s.size()) b.marker = t.predicted_step_s[rank];
    c.bars.push_back(std::move(b));
  }
  if (!t.predicted_step_s.empty()) c.marker_label = "predicted";
  return c;
}

// The last traced step, times in ms from its first event; one row per rank.
Gantt pipeline_chart(const RunData& run, size_t index) {
  int64_t step = 0;
  for (const TraceSpan& s : run.trace) step = std::max(step, s.step);
  double t0 = INFINITY;
  int64_t ranks = 0;
  for (const TraceSpan& s : run.trace) {
    if (s.step != step) continue;
    t0 = std::min(t0, s.ts_us);
    ranks = std::max(ranks, s.pid + 1);
  }
  Gantt g{fmt::format("pipeline_{}", index), fmt::format("Timeline of step {}: {} (gaps are idle time)", step, run.name),
          "ms from the step's first event", {}};
  for (int64_t r = 0; r < ranks; ++r) g.rows.push_back({fmt::format("rank {}", r), {}});
  for (const TraceSpan& s : run.trace) {
    if (s.step != step) continue;
    g.rows[static_cast<size_t>(s.pid)].items.push_back(
        {(s.ts_us - t0) / 1e3, (s.ts_us + s.dur_us - t0) / 1e3, s.name, s.tid == 0 ? 0 : 1});
  }
  return g;
}

std::string run_table(const std::vector<RunData>& runs) {
  std::string out = "<table><tr><th></th><th>run</th><th>folder</th><th>steps</th><th>final loss</th><th>last val loss</th>"
                    "<th>tokens/s (last)</th><th>notes</th></tr>";
  for (size_t r = 0; r < runs.size(); ++r) {
    const RunData& run = runs[r];
    const MetricPoint& last = run.metrics.back();
    std::optional<double> val;
    for (const MetricPoint& p : run.metrics)
      if (p.val_loss) val = p.val_loss;
    std::string notes;
    for (int64_t s : run.resumed_after) notes += fmt::format("resumed after step {}; ", s);
    if (run.times) notes += fmt::format("{} rank(s) timed; ", run.times->seconds.size());
    if (!run.trace.empty()) notes += "traced; ";
    if (run.predicted_step_s) notes += fmt::format("predicted step {:.4g} s; ", *run.predicted_step_s);
    out += fmt::format("<tr><td style=\"background:{}\">&#160;&#160;</td><td>{}</td><td>{}</td><td>{}</td><td>{:.4f}</td>"
                       "<td>{}</td><td>{:.0f}</td><td>{}</td></tr>",
                       palette_color(static_cast<int>(r)), xml_escape(run.name), xml_escape(run.dir), last.step,
                       last.loss, val ? fmt::format("{:.4f}", *val) : "—", last.tokens_per_s, xml_escape(notes));
  }
  return out + "</table>";
}

}  // namespace

std::vector<Chart> report_charts(const std::vector<RunData>& runs) {
  auto step = [](const MetricPoint& p) { return std::optional<double>(static_cast<double>(p.step)); };
  auto tokens = [](const MetricPoint& p) { return std::optional<double>(p.tokens); };
  std::vector<Chart> charts;
  charts.push_back({"loss_step", svg_line_chart(loss_chart(runs, "loss_step", "step", step))});
  charts.push_back({"loss_tokens", svg_line_chart(loss_chart(runs, "loss_tokens", "tokens", tokens))});
  const std::vector<std::tuple<std::string, std::string, std::string, Field>> simple = {
      {"lr", "Learning rate", "lr", [](const MetricPoint& p) { return std::optional<double>(p.lr); }},
      {"grad_norm", "Gradient norm (before clipping)", "norm", [](const MetricPoint& p) { return std::optional<double>(p.grad_norm); }},
      {"tokens_per_s", "Throughput", "tokens/s", [](const MetricPoint& p) { return std::optional<double>(p.tokens_per_s); }},
      {"mfu", "Model FLOPs utilisation", "MFU %", [](const MetricPoint& p) { return std::optional<double>(100 * p.mfu); }},
  };
  for (const auto& [id, title, y_label, field] : simple) {
    charts.push_back({id, svg_line_chart(metric_chart(runs, id, title, "step", y_label, step, field))});
  }
  LineChart step_time = metric_chart(runs, "step_s", "Step time", "step", "seconds", step,
                                     [](const MetricPoint& p) { return std::optional<double>(p.step_s); });
  for (size_t r = 0; r < runs.size(); ++r) {
    Series predicted{"predicted: " + runs[r].name, {}, true, false, static_cast<int>(r)};
    for (const MetricPoint& p : runs[r].metrics) {
      const std::optional<double> v = p.predicted_step_s ? p.predicted_step_s : runs[r].predicted_step_s;
      if (v) predicted.points.emplace_back(static_cast<double>(p.step), *v);
    }
    if (!predicted.points.empty()) step_time.series.push_back(std::move(predicted));
  }
  charts.push_back({"step_s", svg_line_chart(step_time)});
  for (size_t r = 0; r < runs.size(); ++r) {
    if (runs[r].times) charts.push_back({fmt::format("time_{}", r), svg_stacked_bars(time_chart(runs[r], r))});
  }
  for (size_t r = 0; r < runs.size(); ++r) {
    if (!runs[r].trace.empty()) charts.push_back({fmt::format("pipeline_{}", r), svg_gantt(pipeline_chart(runs[r], r))});
  }
  return charts;
}

std::string report_html(const std::vector<RunData>& runs, const std::vector<Chart>& charts) {
  std::string title = "hetu report: ";
  for (size_t r = 0; r < runs.size(); ++r) title += (r ? ", " : "") + runs[r].name;
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>"
      "body{{font-family:'DejaVu Sans',Arial,sans-serif;margin:24px;background:#f4f4f4;color:#222}}"
      "table{{border-collapse:collapse;background:white;margin-bottom:16px}}td,th{{border:1px solid #ccc;padding:4px 8px;"
      "text-align:left}}.chart{{background:white;border:1px solid #ccc;margin:8px;display:inline-block;vertical-align:top}}"
      "</style></head><body>\n<h1>{}</h1>\n",
      xml_escape(title), xml_escape(title));
  out += run_table(runs) + "\n";
  for (const Chart& c : charts) out += "<div class=\"chart\">" + c.svg + "</div>\n";
  out += "<p>Made by <code>hetu report</code>. Time per step: exclusive seconds per phase, averaged over the steps "
         "since the previous logged step (docs/config.md, \"Seeing a run\").</p>\n</body></html>\n";
  return out;
}

}  // namespace hetu::report
