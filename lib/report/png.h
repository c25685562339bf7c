// Rasterising a chart's SVG to PNG with librsvg and cairo (Debian librsvg2-dev), for
// `hetu report --png DIR`. A build without librsvg says so instead.
//
//   if (png_available()) write_png(chart.svg, "out/loss_step.png");
#pragma once

#include <string>

namespace hetu::report {

bool png_available();
// Renders `svg` at its own size (white background) into `path`, atomically; throws
// hetu::Error naming the file on failure.
void write_png(const std::string& svg, const std::string& path);

}  // namespace hetu::report
