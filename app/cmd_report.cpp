// `hetu report RUN_DIR [RUN_DIR...] [--out report.html] [--png DIR]`: loads each run folder
// (lib/report/run_data.h), draws the charts and writes the HTML page (lib/report/report_html.h)
// and, with --png, one PNG per chart (lib/report/png.h).
#include <spdlog/spdlog.h>

#include <filesystem>

#include "app/commands.h"
#include "lib/report/png.h"
#include "lib/report/report_html.h"
#include "lib/util/atomic_file.h"
#include "lib/util/error.h"

namespace hetu::app {

int run_report(const ReportOptions& options) {
  HT_USAGE_CHECK(!options.runs.empty(), "report: name at least one run folder");
  if (!options.png_dir.empty()) {
    HT_USAGE_CHECK(report::png_available(), "report --png: this hetu was built without librsvg "
                   "(apt-get install librsvg2-dev, then rebuild)");
  }
  std::vector<report::RunData> runs;
  for (const std::string& dir : options.runs) runs.push_back(report::load_run(dir));
  const std::vector<report::Chart> charts = report::report_charts(runs);
  const std::string out = options.out.empty() ? options.runs.front() + "/report.html" : options.out;
  const std::filesystem::path parent = std::filesystem::path(out).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  write_file_atomic(out, report::report_html(runs, charts));
  spdlog::info("report: {} ({} chart(s), {} run(s))", out, charts.size(), runs.size());
  if (!options.png_dir.empty()) {
    std::filesystem::create_directories(options.png_dir);
    for (const report::Chart& c : charts) report::write_png(c.svg, options.png_dir + "/" + c.id + ".png");
    spdlog::info("report: {} PNG file(s) in {}", charts.size(), options.png_dir);
  }
  return 0;
}

}  // namespace hetu::app
