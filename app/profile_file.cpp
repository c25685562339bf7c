// Profile files: written with fmt, read with TOML++ (unknown keys are errors).
#include "app/profile_file.h"

#include <fmt/core.h>

#include <toml++/toml.h>

#include "lib/util/error.h"

namespace hetu::app {
namespace {

constexpr const char* kTimeKeys[] = {"layer_forward_s", "layer_backward_s", "embed_forward_s",
                                     "embed_backward_s", "head_forward_s", "head_backward_s"};

double* time_field(DeviceTypeProfile& p, std::string_view key) {
  if (key == "layer_forward_s") return &p.layer_forward_s;
  if (key == "layer_backward_s") return &p.layer_backward_s;
  if (key == "embed_forward_s") return &p.embed_forward_s;
  if (key == "embed_backward_s") return &p.embed_backward_s;
  if (key == "head_forward_s") return &p.head_forward_s;
  if (key == "head_backward_s") return &p.head_backward_s;
  return nullptr;
}

}  // namespace

std::string to_toml(const std::vector<DeviceTypeProfile>& profiles, const std::string& header) {
  std::string out = header;
  for (DeviceTypeProfile p : profiles) {
    out += fmt::format("\n[[profile]]\ndevice_type = \"{}\"\nmicro_batch = {}\nseq_len = {}\nprecision = \"{}\"\n",
                       p.device_type, p.micro_batch, p.seq_len, p.precision);
    for (const char* key : kTimeKeys) out += fmt::format("{} = {:.9g}\n", key, *time_field(p, key));
  }
  return out;
}

std::vector<DeviceTypeProfile> read_profile_file(const std::string& path) {
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& error) {
    HT_USAGE_ERROR("{}: not a profile file: {}", path, std::string(error.description()));
  }
  std::vector<DeviceTypeProfile> out;
  const toml::array* entries = root["profile"].as_array();
  HT_USAGE_CHECK(entries != nullptr && !entries->empty(), "{}: no [[profile]] tables (write one with hetu profile)",
                 path);
  for (size_t i = 0; i < entries->size(); ++i) {
    const toml::table* t = entries->get(i)->as_table();
    HT_USAGE_CHECK(t != nullptr, "{}: profile[{}] is not a table", path, i);
    DeviceTypeProfile p;
    for (const auto& [key, value] : *t) {
      const std::string where = fmt::format("{}: profile[{}].{}", path, i, std::string(key.str()));
      if (key == "device_type" || key == "precision") {
        HT_USAGE_CHECK(value.is_string(), "{}: expected a string", where);
        (key == "device_type" ? p.device_type : p.precision) = *value.value<std::string>();
      } else if (key == "micro_batch" || key == "seq_len") {
        HT_USAGE_CHECK(value.is_integer() && *value.value<int64_t>() >= 1, "{}: expected an integer >= 1", where);
        (key == "micro_batch" ? p.micro_batch : p.seq_len) = *value.value<int64_t>();
      } else if (double* field = time_field(p, key.str())) {
        HT_USAGE_CHECK(value.is_number() && *value.value<double>() >= 0, "{}: expected seconds >= 0", where);
        *field = *value.value<double>();
      } else {
        HT_USAGE_ERROR("{}: unknown key", where);
      }
    }
    HT_USAGE_CHECK(!p.device_type.empty(), "{}: profile[{}].device_type is missing", path, i);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace hetu::app
