// Reads a device catalogue file ([cluster] device_catalog = "my_devices.toml"):
//   [[device]]
//   name = "MI250X"        kind = "gpu"      memory_gib = 64
//   peak_tflops_bf16 = 383  peak_tflops_fp32 = 47.9  memory_bandwidth_gbs = 3277
//   peak_tflops_fp16 = 383 (dense fp16 peak; 0 or absent: no fp16 path, precision = "fp16" refused)
//   emulate_slowdown = 2.0 (CPU kinds only: rehearse a device F times slower on this machine)
//   emulate_slowdown_schedule = [[20, 3.0], [40, 1.0]] (CPU kinds only: F from step 20 on, then from 40 on)
// Entries add to the builtin catalogue or replace a builtin entry of the same name.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lib/config/config_internal.h"
#include "lib/util/error.h"

namespace hetu::config {

void read_device_catalog_file(const std::string& path, DeviceCatalog& catalog) {
  std::ifstream in(path, std::ios::binary);
  HT_USAGE_CHECK(in.good() && !std::filesystem::is_directory(path), "cannot read device catalogue file {}", path);
  std::ostringstream text;
  text << in.rdbuf();
  read_device_catalog_text(text.str(), path, catalog);
}

void read_device_catalog_text(std::string_view text, const std::string& path, DeviceCatalog& catalog) {
  toml::table root = parse_toml_text(text, path);
  SourceMap sources(path);
  TableReader reader(root, "", sources);
  std::vector<TableReader> devices = reader.get_table_array("device");
  if (devices.empty()) reader.fail("device", "a device catalogue file needs at least one [[device]] table");
  for (TableReader& d : devices) {
    DeviceProfile type;
    type.name = d.require_string("name");
    if (auto kind = d.get_choice("kind", {"cpu", "gpu"})) type.kind = static_cast<DeviceKind>(*kind);
    if (auto v = d.get_number("peak_tflops_bf16")) type.peak_tflops_bf16 = *v;
    if (auto v = d.get_number("peak_tflops_fp32")) type.peak_tflops_fp32 = *v;
    if (auto v = d.get_number("peak_tflops_fp16")) type.peak_tflops_fp16 = *v;
    if (!(type.peak_tflops_fp16 >= 0)) d.fail("peak_tflops_fp16", fmt::format("must be >= 0 (0: no fp16 path), got {}", type.peak_tflops_fp16));
    if (auto v = d.get_number("memory_gib")) type.memory_gib = *v;
    if (!(type.memory_gib >= 0)) d.fail("memory_gib", fmt::format("must be >= 0, got {}", type.memory_gib));
    if (auto v = d.get_number("memory_bandwidth_gbs")) type.memory_bandwidth_gbs = *v;
    if (!(type.memory_bandwidth_gbs >= 0)) {
      d.fail("memory_bandwidth_gbs", fmt::format("must be >= 0, got {}", type.memory_bandwidth_gbs));
    }
    if (auto v = d.get_number("emulate_slowdown")) {
      if (!(*v >= 1) || !std::isfinite(*v)) d.fail("emulate_slowdown", fmt::format("must be a number >= 1, got {}", *v));
      if (type.kind != DeviceKind::cpu) {
        d.fail("emulate_slowdown", "only CPU kinds can emulate a slowdown (device \"" + type.name + "\" is a gpu)");
      }
      type.emulate_slowdown = *v;
    }
    if (auto v = d.get_number_arrays("emulate_slowdown_schedule")) {
      if (type.kind != DeviceKind::cpu) {
        d.fail("emulate_slowdown_schedule", "only CPU kinds can emulate a slowdown (device \"" + type.name + "\" is a gpu)");
      }
      int64_t previous = 0;
      for (const std::vector<double>& entry : *v) {
        const bool pair = entry.size() == 2 && entry[0] == std::floor(entry[0]) && entry[0] >= 1 && entry[0] < 1e15;
        if (!pair || entry[0] <= double(previous) || !(entry[1] >= 1) || !std::isfinite(entry[1])) {
          d.fail("emulate_slowdown_schedule", fmt::format("expected [[step, F], ...] with steps >= 1 increasing and F a "
                                                          "number >= 1, got an entry [{}]", fmt::join(entry, ", ")));
        }
        previous = static_cast<int64_t>(entry[0]);
        type.emulate_slowdown_schedule.emplace_back(previous, entry[1]);
      }
    }
    if (auto v = d.get_bool("emulate_cpu_time")) {
      if (type.kind != DeviceKind::cpu) {
        d.fail("emulate_cpu_time", "only CPU kinds emulate a slowdown (device \"" + type.name + "\" is a gpu)");
      }
      type.emulate_cpu_time = *v;
    }
    if (type.peak_tflops_bf16 < 0 || type.peak_tflops_fp32 <= 0) {
      d.fail("peak_tflops_fp32", "peaks must be >= 0 and peak_tflops_fp32 > 0 (needed for MFU)");
    }
    d.finish();
    catalog.add(std::move(type));
  }
  reader.finish();
}

}  // namespace hetu::config
