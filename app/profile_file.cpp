// Profile files: written with fmt, read with TOML++ (unknown keys are errors).
#include "app/profile_file.h"

#include <fmt/core.h>

#include <toml++/toml.h>

#include "lib/util/error.h"

namespace hetu::app {
namespace {

constexpr const char* kTimeKeys[] = {"layer_forward_s", "layer_backward_s", "embed_forward_s",
                                     "embed_backward_s", "head_forward_s", "head_backward_s"};
// Optional measurements, written only when measured (nonzero).
constexpr const char* kOptionalKeys[] = {"optimizer_s", "layer_activation_bytes", "embed_activation_bytes",
                                         "head_activation_bytes", "head_workspace_bytes", "reserved_bytes"};

double* time_field(DeviceTypeProfile& p, std::string_view key) {
  if (key == "layer_forward_s") return &p.layer_forward_s;
  if (key == "layer_backward_s") return &p.layer_backward_s;
  if (key == "embed_forward_s") return &p.embed_forward_s;
  if (key == "embed_backward_s") return &p.embed_backward_s;
  if (key == "head_forward_s") return &p.head_forward_s;
  if (key == "head_backward_s") return &p.head_backward_s;
  if (key == "optimizer_s") return &p.optimizer_s;
  if (key == "layer_activation_bytes") return &p.layer_activation_bytes;
  if (key == "embed_activation_bytes") return &p.embed_activation_bytes;
  if (key == "head_activation_bytes") return &p.head_activation_bytes;
  if (key == "head_workspace_bytes") return &p.head_workspace_bytes;
  if (key == "reserved_bytes") return &p.reserved_bytes;
  return nullptr;
}

toml::table parse(const std::string& path) {
  try {
    return toml::parse_file(path);
  } catch (const toml::parse_error& error) {
    HT_USAGE_ERROR("{}: not a profile file: {}", path, std::string(error.description()));
  }
}

// A number >= 0 of `unit` ("seconds", "bytes").
double non_negative(const toml::node& value, const char* unit, const std::string& where) {
  HT_USAGE_CHECK(value.is_number() && *value.value<double>() >= 0, "{}: expected {} >= 0", where, unit);
  return *value.value<double>();
}

const char* unit_of(std::string_view key) { return key.ends_with("_s") ? "seconds" : "bytes"; }

}  // namespace

std::string to_toml(const std::vector<DeviceTypeProfile>& profiles, const std::string& header) {
  std::string out = header;
  for (DeviceTypeProfile p : profiles) {
    out += fmt::format("\n[[profile]]\ndevice_type = \"{}\"\nmicro_batch = {}\nseq_len = {}\nprecision = \"{}\"\n",
                       p.device_type, p.micro_batch, p.seq_len, p.precision);
    if (p.tp > 0) out += fmt::format("tp = {}\n", p.tp);
    for (const char* key : kTimeKeys) out += fmt::format("{} = {:.9g}\n", key, *time_field(p, key));
    for (const char* key : kOptionalKeys) {
      if (*time_field(p, key) > 0) out += fmt::format("{} = {:.9g}\n", key, *time_field(p, key));
    }
  }
  return out;
}

std::vector<DeviceTypeProfile> read_profile_file(const std::string& path) {
  const toml::table root = parse(path);
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
      } else if (key == "micro_batch" || key == "seq_len" || key == "tp") {
        HT_USAGE_CHECK(value.is_integer() && *value.value<int64_t>() >= 1, "{}: expected an integer >= 1", where);
        (key == "micro_batch" ? p.micro_batch : key == "seq_len" ? p.seq_len : p.tp) = *value.value<int64_t>();
      } else if (double* field = time_field(p, key.str())) {
        *field = non_negative(value, unit_of(key.str()), where);
      } else {
        HT_USAGE_ERROR("{}: unknown key", where);
      }
    }
    HT_USAGE_CHECK(!p.device_type.empty(), "{}: profile[{}].device_type is missing", path, i);
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<LinkProfile> read_profile_links(const std::string& path) {
  const toml::table root = parse(path);
  std::vector<LinkProfile> out;
  const toml::node* links = root.get("link");
  if (links == nullptr) return out;
  HT_USAGE_CHECK(links->is_array_of_tables(), "{}: link must be [[link]] tables", path);
  const toml::array& entries = *links->as_array();
  for (size_t i = 0; i < entries.size(); ++i) {
    const toml::table& t = *entries.get(i)->as_table();
    LinkProfile l;
    for (const auto& [key, value] : t) {
      const std::string where = fmt::format("{}: link[{}].{}", path, i, std::string(key.str()));
      if (key == "scope" || key == "device_type") {
        HT_USAGE_CHECK(value.is_string(), "{}: expected a string", where);
        (key == "scope" ? l.scope : l.device_type) = *value.value<std::string>();
      } else if (key == "bandwidth_gbs_poly") {
        const toml::array* poly = value.as_array();
        HT_USAGE_CHECK(poly != nullptr && !poly->empty(), "{}: expected a list of coefficients", where);
        for (const toml::node& c : *poly) {
          HT_USAGE_CHECK(c.is_number(), "{}: expected numbers", where);
          l.bandwidth_gbs_poly.push_back(*c.value<double>());
        }
      } else if (key == "max_bytes_per_s" || key == "latency_s") {
        (key == "latency_s" ? l.latency_s : l.max_bytes_per_s) =
            non_negative(value, key == "latency_s" ? "seconds" : "bytes/s", where);
      } else {
        HT_USAGE_ERROR("{}: unknown key", where);
      }
    }
    HT_USAGE_CHECK(l.scope == "inter_node" || l.scope == "intra_node",
                   "{}: link[{}].scope must be \"inter_node\" or \"intra_node\"", path, i);
    HT_USAGE_CHECK(!l.device_type.empty(), "{}: link[{}].device_type is missing", path, i);
    HT_USAGE_CHECK(!l.bandwidth_gbs_poly.empty(), "{}: link[{}].bandwidth_gbs_poly is missing", path, i);
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace hetu::app
