// SVG charts for `hetu report`: line charts (several series, overlays of runs), stacked bars
// (per-rank time breakdown) and a Gantt chart (a pipeline timeline, one row per rank). Each
// returns one standalone, well-formed <svg> element (no scripts, no external fonts). Every
// line series keeps its data: its <polyline> has data-label and data-values="x,y x,y ..."
// (the values as given) and the <svg> carries its axis ranges (data-x0/x1/y0/y1) and plot
// box (data-left/right/top/bottom), so the points can be read back from the pixels too.
//
//   LineChart c{"loss", "Training loss", "step", "loss"};
//   c.series.push_back({"run A", {{1, 5.5}, {2, 5.1}}});
//   std::string svg = svg_line_chart(c);
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hetu::report {

constexpr int kChartWidth = 760;
constexpr int kChartHeight = 300;

struct Series {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in order
  bool dashed = false;
  bool markers = false;                           // a dot per point (sparse series: validation)
  int color = -1;                                 // palette index; -1: the series' position
};

struct LineChart {
  std::string id, title, x_label, y_label;
  std::vector<Series> series;
};

struct Bar {
  std::string label;                 // under the bar, e.g. "rank 1"
  std::vector<double> values;        // one per segment, stacked bottom-up
  std::optional<double> marker;      // a tick across the bar (a predicted total)
};

struct StackedBars {
  std::string id, title, y_label;
  std::vector<std::string> segments;  // legend names, one per value
  std::vector<Bar> bars;
  std::string marker_label;           // legend entry for the marker, when any bar has one
};

struct GanttItem {
  double start = 0, end = 0;  // x units (milliseconds)
  std::string name;           // colours by name; shown as the tooltip (<title>)
  int lane = 0;               // 0: the row's main lane (compute), 1: a thin lane under it (communication)
};

struct GanttRow {
  std::string label;
  std::vector<GanttItem> items;
};

struct Gantt {
  std::string id, title, x_label;
  std::vector<GanttRow> rows;
};

std::string svg_line_chart(const LineChart& chart);
std::string svg_stacked_bars(const StackedBars& chart);
std::string svg_gantt(const Gantt& chart);

// The colour of palette entry i (cycles).
std::string_view palette_color(int i);
std::string xml_escape(std::string_view text);

}  // namespace hetu::report
