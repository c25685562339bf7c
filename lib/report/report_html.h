// The `hetu report` document: the charts of one or more runs (training and validation loss
// against step and tokens, learning rate, grad norm, tokens/s, MFU, step time with the
// planner's prediction when there is one, per-rank time breakdown, and the pipeline
// timeline of one traced step) and one self-contained HTML page holding them as inline SVG
// (no script, font or image fetched from anywhere). Several runs are overlaid, one colour each.
//
//   std::vector<RunData> runs = {load_run("runs/a"), load_run("runs/b")};
//   std::vector<Chart> charts = report_charts(runs);
//   write_file_atomic("report.html", report_html(runs, charts));
#pragma once

#include <string>
#include <vector>

#include "lib/report/run_data.h"

namespace hetu::report {

struct Chart {
  std::string id;   // a file-name-safe id, e.g. "loss_step", "time_0", "pipeline_0"
  std::string svg;
};

std::vector<Chart> report_charts(const std::vector<RunData>& runs);
std::string report_html(const std::vector<RunData>& runs, const std::vector<Chart>& charts);

}  // namespace hetu::report
