// PNG output in a build without librsvg (png.h): --png is refused with what to install.
#include "lib/report/png.h"

#include "lib/util/error.h"

namespace hetu::report {

bool png_available() { return false; }

void write_png(const std::string& /*svg*/, const std::string& path) {
  HT_USAGE_ERROR("report: cannot write {}: this hetu was built without librsvg (apt-get install librsvg2-dev, "
                 "then rebuild)", path);
}

}  // namespace hetu::report
