// SVG drawing of the report's charts. See svg_chart.h for what each element carries.
#include "lib/report/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace hetu::report {
namespace {

constexpr int kLeft = 70, kRight = 210, kTop = 34, kBottom = 46;  // margins; the legend sits right

constexpr std::string_view kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                         "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

struct Axis {
  double lo, hi;  // data range
  int p0, p1;     // pixels (p0 maps lo)
  double to_px(double v) const { return p0 + (v - lo) / (hi - lo) * (p1 - p0); }
};

// A range that includes the data with some room, never empty.
std::pair<double, double> padded(double lo, double hi, bool from_zero) {
  if (from_zero && lo > 0) lo = 0;
  if (!(hi > lo)) {
    const double d = std::abs(lo) > 0 ? std::abs(lo) * 0.1 : 1.0;
    return {lo - d, hi + d};
  }
  const double pad = (hi - lo) * 0.05;
  return {from_zero && lo == 0 ? 0 : lo - pad, hi + pad};
}

double nice_step(double range) {
  const double raw = range / 5;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (raw <= m * mag) return m * mag;
  }
  return 10 * mag;
}

std::string number(double v) {
  if (std::abs(v) < 1e-12) return "0";
  return fmt::format("{:.4g}", v);
}

std::string svg_open(const std::string& id, int width, int height, const std::string& attributes = "") {
  return fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" id="{}" width="{}" height="{}" viewBox="0 0 {} {}" )"
                     R"(font-family="DejaVu Sans, Arial, sans-serif" font-size="12"{}>)"
                     "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>",
                     xml_escape(id), width, height, width, height, attributes);
}

std::string title_text(const std::string& title) {
  return fmt::format(R"(<text x="{}" y="20" font-size="14" font-weight="bold">{}</text>)", kLeft, xml_escape(title));
}

// Grid lines, tick labels and axis titles of a plot box.
std::string axes(const Axis& x, const Axis& y, const std::string& x_label, const std::string& y_label, bool x_ticks,
                 bool y_ticks = true) {
  std::string out;
  out += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#444"/>)", x.p0, y.p1,
                     x.p1 - x.p0, y.p0 - y.p1);
  const double ys = nice_step(y.hi - y.lo);
  for (double v = std::ceil(y.lo / ys) * ys; y_ticks && v <= y.hi + ys * 1e-9; v += ys) {
    const double py = y.to_px(v);
    out += fmt::format(R"(<line x1="{}" x2="{}" y1="{:.2f}" y2="{:.2f}" stroke="#ddd"/>)", x.p0, x.p1, py, py);
    out += fmt::format(R"(<text x="{}" y="{:.2f}" text-anchor="end">{}</text>)", x.p0 - 6, py + 4, number(v));
  }
  if (x_ticks) {
    const double xs = nice_step(x.hi - x.lo);
    for (double v = std::ceil(x.lo / xs) * xs; v <= x.hi + xs * 1e-9; v += xs) {
      const double px = x.to_px(v);
      out += fmt::format(R"(<line x1="{:.2f}" x2="{:.2f}" y1="{}" y2="{}" stroke="#ddd"/>)", px, px, y.p1, y.p0);
      out += fmt::format(R"(<text x="{:.2f}" y="{}" text-anchor="middle">{}</text>)", px, y.p0 + 16, number(v));
    }
  }
  out += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">{}</text>)", (x.p0 + x.p1) / 2, y.p0 + 34,
                     xml_escape(x_label));
  out += fmt::format(R"svg(<text transform="translate(16,{}) rotate(-90)" text-anchor="middle">{}</text>)svg",
                     (y.p0 + y.p1) / 2, xml_escape(y_label));
  return out;
}

std::string legend_entry(int index, std::string_view color, const std::string& label, bool dashed) {
  const int y = kTop + 8 + 18 * index;
  const int x = kChartWidth - kRight + 12;
  return fmt::format(R"(<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="{}" stroke-width="3"{}/>)"
                     R"(<text x="{}" y="{}">{}</text>)",
                     x, x + 20, y, y, color, dashed ? R"( stroke-dasharray="5,3")" : "", x + 26, y + 4,
                     xml_escape(label.size() > 28 ? label.substr(0, 27) + "…" : label));
}

std::string_view color_of_name(const std::string& name) {
  // One colour per phase of the step timer, the same in the per-rank bars and the timeline;
  // waiting in a pipeline exchange shares send_recv's colour, tp collectives all_reduce's.
  static const std::map<std::string, int> fixed = {
      {"forward", 0},   {"backward", 2}, {"pipe_wait", 9}, {"tp_comm", 1},    {"grad_sync", 3},  {"optimizer", 4},
      {"checkpoint", 5}, {"eval", 6},    {"data", 7},      {"other", 8},      {"send_recv", 9},  {"all_reduce", 1}};
  auto it = fixed.find(name);
  if (it != fixed.end()) return palette_color(it->second);
  int h = 0;
  for (char c : name) h = h * 31 + static_cast<unsigned char>(c);
  return palette_color(std::abs(h) % 10);
}

}  // namespace

std::string_view palette_color(int i) { return kPalette[static_cast<size_t>(((i % 10) + 10) % 10)]; }

std::string xml_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string svg_line_chart(const LineChart& c) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const Series& s : c.series) {
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  }
  if (!std::isfinite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  const auto [ylo, yhi] = padded(y0, y1, false);
  const auto [xlo, xhi] = x1 > x0 ? std::pair{x0, x1} : padded(x0, x1, false);
  const Axis x{xlo, xhi, kLeft, kChartWidth - kRight};
  const Axis y{ylo, yhi, kChartHeight - kBottom, kTop};
  std::string out = svg_open(
      c.id, kChartWidth, kChartHeight,
      fmt::format(R"( data-x0="{}" data-x1="{}" data-y0="{}" data-y1="{}" data-left="{}" data-right="{}" data-top="{}" data-bottom="{}")",
                  x.lo, x.hi, y.lo, y.hi, x.p0, x.p1, y.p1, y.p0));
  out += title_text(c.title) + axes(x, y, c.x_label, c.y_label, true);
  for (size_t i = 0; i < c.series.size(); ++i) {
    const Series& s = c.series[i];
    const std::string_view color = palette_color(s.color >= 0 ? s.color : static_cast<int>(i));
    std::string px, values;
    for (const auto& [vx, vy] : s.points) {
      if (!std::isfinite(vx) || !std::isfinite(vy)) continue;
      px += fmt::format("{}{:.2f},{:.2f}", px.empty() ? "" : " ", x.to_px(vx), y.to_px(vy));
      values += fmt::format("{}{},{}", values.empty() ? "" : " ", vx, vy);
    }
    out += fmt::format(R"(<polyline class="series" data-label="{}" data-values="{}" points="{}" fill="none" stroke="{}" stroke-width="1.8"{}/>)",
                       xml_escape(s.label), values, px, color, s.dashed ? R"( stroke-dasharray="5,3")" : "");
    if (s.markers) {
      for (const auto& [vx, vy] : s.points) {
        out += fmt::format(R"(<circle cx="{:.2f}" cy="{:.2f}" r="3" fill="{}"/>)", x.to_px(vx), y.to_px(vy), color);
      }
    }
    out += legend_entry(static_cast<int>(i), color, s.label, s.dashed);
  }
  return out + "</svg>";
}

std::string svg_stacked_bars(const StackedBars& c) {
  double top = 0;
  for (const Bar& b : c.bars) {
    double sum = 0;
    for (double v : b.values) sum += std::max(0.0, v);
    top = std::max({top, sum, b.marker.value_or(0)});
  }
  const Axis y{0, top > 0 ? top * 1.08 : 1, kChartHeight - kBottom, kTop};
  const Axis x{0, 1, kLeft, kChartWidth - kRight};
  std::string out = svg_open(c.id, kChartWidth, kChartHeight) + title_text(c.title) + axes(x, y, "", c.y_label, false);
  const double slot = static_cast<double>(x.p1 - x.p0) / static_cast<double>(std::max<size_t>(c.bars.size(), 1));
  const double width = std::min(60.0, slot * 0.7);
  for (size_t i = 0; i < c.bars.size(); ++i) {
    const Bar& b = c.bars[i];
    const double left = x.p0 + slot * (static_cast<double>(i) + 0.5) - width / 2;
    double base = 0;
    for (size_t k = 0; k < b.values.size(); ++k) {
      const double v = std::max(0.0, b.values[k]);
      if (v <= 0) continue;
      const double py1 = y.to_px(base + v), py0 = y.to_px(base);
      out += fmt::format(R"(<rect class="segment" data-bar="{}" data-segment="{}" data-value="{}" x="{:.2f}" y="{:.2f}" width="{:.2f}" height="{:.2f}" fill="{}"><title>{} {}: {:.4g} s</title></rect>)",
                         xml_escape(b.label), xml_escape(c.segments[k]), v, left, py1, width, py0 - py1,
                         color_of_name(c.segments[k]), xml_escape(b.label), xml_escape(c.segments[k]), v);
      base += v;
    }
    if (b.marker) {
      const double py = y.to_px(*b.marker);
      out += fmt::format(R"(<line class="marker" data-bar="{}" data-value="{}" x1="{:.2f}" x2="{:.2f}" y1="{:.2f}" y2="{:.2f}" stroke="black" stroke-width="3" stroke-dasharray="4,2"/>)",
                         xml_escape(b.label), *b.marker, left - 6, left + width + 6, py, py);
    }
    out += fmt::format(R"(<text x="{:.2f}" y="{}" text-anchor="middle">{}</text>)", left + width / 2,
                       kChartHeight - kBottom + 16, xml_escape(b.label));
  }
  for (size_t k = 0; k < c.segments.size(); ++k) {
    out += legend_entry(static_cast<int>(k), color_of_name(c.segments[k]), c.segments[k], false);
  }
  if (!c.marker_label.empty()) {
    const int yy = kTop + 8 + 18 * static_cast<int>(c.segments.size());
    const int xx = kChartWidth - kRight + 12;
    out += fmt::format(R"(<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="black" stroke-width="3" stroke-dasharray="4,2"/><text x="{}" y="{}">{}</text>)",
                       xx, xx + 20, yy, yy, xx + 26, yy + 4, xml_escape(c.marker_label));
  }
  return out + "</svg>";
}

std::string svg_gantt(const Gantt& c) {
  constexpr int kRow = 34, kMain = 20, kComm = 8;
  std::map<std::string, int> legend;
  for (const GanttRow& r : c.rows)
    for (const GanttItem& it : r.items) legend.emplace(it.name, 0);
  const int height = std::max(kTop + kBottom + kRow * static_cast<int>(std::max<size_t>(c.rows.size(), 1)),
                              kTop + 20 + 18 * static_cast<int>(legend.size()));
  double t0 = INFINITY, t1 = -INFINITY;
  for (const GanttRow& r : c.rows) {
    for (const GanttItem& it : r.items) t0 = std::min(t0, it.start), t1 = std::max(t1, it.end);
  }
  if (!std::isfinite(t0)) t0 = 0, t1 = 1;
  const Axis x{t0, t1 > t0 ? t1 : t0 + 1, kLeft + 40, kChartWidth - kRight};
  const Axis y{0, 1, height - kBottom, kTop};
  std::string out = svg_open(c.id, kChartWidth, height) + title_text(c.title) + axes(x, y, c.x_label, "", true, false);
  for (size_t r = 0; r < c.rows.size(); ++r) {
    const int top = kTop + 6 + kRow * static_cast<int>(r);
    out += fmt::format(R"(<text x="{}" y="{}" text-anchor="end">{}</text>)", kLeft + 34, top + 14, xml_escape(c.rows[r].label));
    for (const GanttItem& it : c.rows[r].items) {
      const double px0 = x.to_px(it.start), px1 = std::max(x.to_px(it.end), px0 + 0.5);
      const std::string_view color = color_of_name(it.name);
      out += fmt::format(R"(<rect class="task" data-row="{}" data-name="{}" x="{:.2f}" y="{}" width="{:.2f}" height="{}" fill="{}"><title>{} {:.3f}-{:.3f} ms</title></rect>)",
                         r, xml_escape(it.name), px0, it.lane == 0 ? top : top + kMain + 1, px1 - px0,
                         it.lane == 0 ? kMain : kComm, color, xml_escape(it.name), it.start, it.end);
    }
  }
  int i = 0;
  for (const auto& [name, unused] : legend) {
    const int yy = kTop + 8 + 18 * i++;
    const int xx = kChartWidth - kRight + 12;
    out += fmt::format(R"(<rect x="{}" y="{}" width="20" height="10" fill="{}"/><text x="{}" y="{}">{}</text>)", xx,
                       yy - 5, color_of_name(name), xx + 26, yy + 4, xml_escape(name));
  }
  return out + "</svg>";
}

}  // namespace hetu::report
