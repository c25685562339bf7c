// Reads a device catalogue file ([cluster] device_catalog = "my_devices.toml"):
//   [[device]]
//   name = "MI250X"        kind = "gpu"      memory_gib = 64
//   peak_tflops_bf16 = 383  peak_tflops_fp32 = 47.9
// Entries add to the builtin catalogue or replace a builtin entry of the same name.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/config/config_internal.h"
#include "lib/util/error.h"

namespace hetu::config {

void read_device_catalog_file(const std::string& path, DeviceCatalog& catalog) {
  std::ifstream in(path, std::ios::binary);
  HT_USAGE_CHECK(in.good() && !std::filesystem::is_directory(path), "cannot read device catalogue file {}", path);
  std::ostringstream text;
  text << in.rdbuf();
  toml::table root = parse_toml_text(text.str(), path);
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
    if (auto v = d.get_number("memory_gib")) type.memory_gib = *v;
    if (type.peak_tflops_bf16 < 0 || type.peak_tflops_fp32 <= 0) {
      d.fail("peak_tflops_fp32", "peaks must be >= 0 and peak_tflops_fp32 > 0 (needed for MFU)");
    }
    d.finish();
    catalog.add(std::move(type));
  }
  reader.finish();
}

}  // namespace hetu::config
