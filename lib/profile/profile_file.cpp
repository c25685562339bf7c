// Profile files: written with fmt, read with TOML++ (unknown keys are errors).
#include "lib/profile/profile_file.h"

#include <fmt/core.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <toml++/toml.h>

#include "lib/util/error.h"

namespace hetu::profile {
namespace {

// The number keys of a [[profile]] table (seconds, bytes, counts; all >= 0): the times,
// always written, then the optional measurements, written only when set (nonzero).
constexpr std::pair<const char*, double DeviceTypeProfile::*> kNumberKeys[] = {
    {"layer_forward_s", &DeviceTypeProfile::layer_forward_s},
    {"layer_backward_s", &DeviceTypeProfile::layer_backward_s},
    {"embed_forward_s", &DeviceTypeProfile::embed_forward_s},
    {"embed_backward_s", &DeviceTypeProfile::embed_backward_s},
    {"head_forward_s", &DeviceTypeProfile::head_forward_s},
    {"head_backward_s", &DeviceTypeProfile::head_backward_s},
    {"layer_activation_bytes", &DeviceTypeProfile::layer_activation_bytes},
    {"embed_activation_bytes", &DeviceTypeProfile::embed_activation_bytes},
    {"head_activation_bytes", &DeviceTypeProfile::head_activation_bytes},
    {"head_workspace_bytes", &DeviceTypeProfile::head_workspace_bytes},
    {"reserved_bytes", &DeviceTypeProfile::reserved_bytes},
    {"optimizer_s", &DeviceTypeProfile::optimizer_s},
    {"optimizer_params", &DeviceTypeProfile::optimizer_params},
    {"spread", &DeviceTypeProfile::spread},
};
constexpr size_t kTimeKeyCount = 6;  // the first six: always written
constexpr std::pair<const char*, int64_t DeviceTypeProfile::*> kCountKeys[] = {
    {"tp", &DeviceTypeProfile::tp},
    {"micro_batch", &DeviceTypeProfile::micro_batch},
    {"seq_len", &DeviceTypeProfile::seq_len},
    {"ranks", &DeviceTypeProfile::ranks},
};

const toml::array* tables(const toml::table& root, const char* name, const std::string& path) {
  const toml::node* node = root.get(name);
  if (node == nullptr) return nullptr;
  HT_USAGE_CHECK(node->is_array_of_tables(), "{}: {} must be [[{}]] tables", path, name, name);
  return node->as_array();
}

DeviceTypeProfile read_device(const toml::table& t, const std::string& where_table) {
  DeviceTypeProfile p;
  for (const auto& [key, value] : t) {
    const std::string where = fmt::format("{}.{}", where_table, std::string(key.str()));
    if (key == "device_type" || key == "precision") {
      HT_USAGE_CHECK(value.is_string(), "{}: expected a string", where);
      (key == "device_type" ? p.device_type : p.precision) = *value.value<std::string>();
      continue;
    }
    bool known = false;
    for (const auto& [name, field] : kCountKeys) {
      if (key != name) continue;
      HT_USAGE_CHECK(value.is_integer() && *value.value<int64_t>() >= 1, "{}: expected an integer >= 1", where);
      p.*field = *value.value<int64_t>();
      known = true;
    }
    for (const auto& [name, field] : kNumberKeys) {
      if (key != name) continue;
      const bool seconds = std::string_view(name).ends_with("_s");
      HT_USAGE_CHECK(value.is_number() && *value.value<double>() >= 0, "{}: expected {} >= 0", where,
                     seconds ? "seconds" : "a number");
      p.*field = *value.value<double>();
      known = true;
    }
    HT_USAGE_CHECK(known, "{}: unknown key", where);
  }
  HT_USAGE_CHECK(!p.device_type.empty(), "{}.device_type is missing", where_table);
  return p;
}

LinkProfile read_link(const toml::table& t, const std::string& where_table) {
  LinkProfile l;
  for (const auto& [key, value] : t) {
    const std::string where = fmt::format("{}.{}", where_table, std::string(key.str()));
    if (key == "kind" || key == "scope") {
      const std::optional<std::string> s = value.value<std::string>();
      const bool kind = key == "kind";
      HT_USAGE_CHECK(s && (kind ? (*s == "p2p" || *s == "all_reduce") : (*s == "within" || *s == "between")),
                     "{}: expected {}", where, kind ? "\"p2p\" or \"all_reduce\"" : "\"within\" or \"between\"");
      (kind ? l.kind : l.scope) = *s;
    } else if (key == "hosts") {
      const toml::array* hosts = value.as_array();
      HT_USAGE_CHECK(hosts != nullptr && !hosts->empty(), "{}: expected a list of host names", where);
      for (const toml::node& h : *hosts) {
        HT_USAGE_CHECK(h.is_string(), "{}: expected a list of host names", where);
        l.hosts.push_back(*h.value<std::string>());
      }
    } else if (key == "device_type" || key == "peer_type") {
      HT_USAGE_CHECK(value.is_string(), "{}: expected a string", where);
      (key == "device_type" ? l.device_type : l.peer_type) = *value.value<std::string>();
    } else if (key == "gpus" || key == "peer_gpus") {
      HT_USAGE_CHECK(value.is_integer() && *value.value<int64_t>() >= 1, "{}: expected an integer >= 1", where);
      (key == "gpus" ? l.gpus : l.peer_gpus) = *value.value<int64_t>();
    } else if (key == "bandwidth_gbs_poly") {
      const toml::array* poly = value.as_array();
      HT_USAGE_CHECK(poly != nullptr && !poly->empty(), "{}: expected a list of coefficients", where);
      for (const toml::node& c : *poly) {
        HT_USAGE_CHECK(c.is_number(), "{}: expected numbers", where);
        l.bandwidth_gbs_poly.push_back(*c.value<double>());
      }
    } else if (key == "max_bytes_per_s") {
      HT_USAGE_CHECK(value.is_number() && *value.value<double>() >= 0, "{}: expected a number >= 0", where);
      l.max_bytes_per_s = *value.value<double>();
    } else if (key == "ranks") {
      HT_USAGE_CHECK(value.is_integer() && *value.value<int64_t>() >= 2, "{}: expected an integer >= 2", where);
      l.ranks = *value.value<int64_t>();
    } else if (key == "gbps" || key == "latency_us") {
      HT_USAGE_CHECK(value.is_number() && *value.value<double>() >= 0, "{}: expected a number >= 0", where);
      (key == "gbps" ? l.gbps : l.latency_us) = *value.value<double>();
    } else {
      HT_USAGE_ERROR("{}: unknown key", where);
    }
  }
  HT_USAGE_CHECK(!l.hosts.empty() || !l.device_type.empty(), "{}: give hosts (a measured link) or device_type (a "
                 "curve for that type's links)", where_table);
  HT_USAGE_CHECK(l.hosts.empty() || l.bandwidth_gbs_poly.empty(), "{}: bandwidth_gbs_poly is for a device_type's "
                 "links, not a measured one between hosts", where_table);
  HT_USAGE_CHECK(l.hosts.empty() || (l.gpus == 0 && l.peer_type.empty() && l.peer_gpus == 0), "{}: gpus, peer_type "
                 "and peer_gpus are for a device_type's curves, not a measured link between hosts", where_table);
  HT_USAGE_CHECK(l.scope == "between" || (l.peer_type.empty() && l.peer_gpus == 0), "{}: peer_type and peer_gpus "
                 "are for links between nodes (scope = \"between\")", where_table);
  return l;
}

}  // namespace

std::string to_toml(const Profile& profile, const std::string& header) {
  std::string out = header;
  for (const DeviceTypeProfile& p : profile.devices) {
    out += fmt::format("\n[[profile]]\ndevice_type = \"{}\"\n", p.device_type);
    for (const auto& [name, field] : kCountKeys) out += fmt::format("{} = {}\n", name, p.*field);
    out += fmt::format("precision = \"{}\"\n", p.precision);
    for (size_t k = 0; k < std::size(kNumberKeys); ++k) {
      const auto& [name, field] = kNumberKeys[k];
      if (k < kTimeKeyCount || p.*field > 0) out += fmt::format("{} = {:.9g}\n", name, p.*field);
    }
  }
  for (const LinkProfile& l : profile.links) {
    std::string hosts;
    for (const std::string& h : l.hosts) hosts += fmt::format("{}\"{}\"", hosts.empty() ? "" : ", ", h);
    out += fmt::format("\n[[link]]\nkind = \"{}\"\nscope = \"{}\"\n", l.kind, l.scope);
    if (!l.hosts.empty()) out += fmt::format("hosts = [{}]\n", hosts);
    if (!l.device_type.empty()) out += fmt::format("device_type = \"{}\"\n", l.device_type);
    if (l.gpus > 0) out += fmt::format("gpus = {}\n", l.gpus);
    if (!l.peer_type.empty()) out += fmt::format("peer_type = \"{}\"\n", l.peer_type);
    if (l.peer_gpus > 0) out += fmt::format("peer_gpus = {}\n", l.peer_gpus);
    out += fmt::format("ranks = {}\ngbps = {:.6g}\nlatency_us = {:.6g}\n", l.ranks, l.gbps, l.latency_us);
    if (!l.bandwidth_gbs_poly.empty()) {
      std::string poly;
      for (double c : l.bandwidth_gbs_poly) poly += fmt::format("{}{:.9g}", poly.empty() ? "" : ", ", c);
      out += fmt::format("bandwidth_gbs_poly = [{}]\nmax_bytes_per_s = {:.9g}\n", poly, l.max_bytes_per_s);
    }
  }
  return out;
}

Profile read_profile_text(const std::string& text, const std::string& path) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& error) {
    HT_USAGE_ERROR("{}: not a profile file: {}", path, std::string(error.description()));
  }
  for (const auto& [key, value] : root) {
    HT_USAGE_CHECK(key == "profile" || key == "link", "{}: unknown table {} (expected [[profile]] and [[link]])", path,
                   std::string(key.str()));
  }
  Profile out;
  const toml::array* devices = tables(root, "profile", path);
  HT_USAGE_CHECK(devices != nullptr && !devices->empty(), "{}: no [[profile]] tables (write one with hetu profile)",
                 path);
  for (size_t i = 0; i < devices->size(); ++i) {
    out.devices.push_back(read_device(*devices->get(i)->as_table(), fmt::format("{}: profile[{}]", path, i)));
  }
  if (const toml::array* links = tables(root, "link", path)) {
    for (size_t i = 0; i < links->size(); ++i) {
      out.links.push_back(read_link(*links->get(i)->as_table(), fmt::format("{}: link[{}]", path, i)));
    }
  }
  return out;
}

Profile read_profile_file(const std::string& path) {
  std::ifstream in(path);
  HT_USAGE_CHECK(in.good(), "{}: cannot read the profile file", path);
  std::stringstream text;
  text << in.rdbuf();
  return read_profile_text(text.str(), path);
}

}  // namespace hetu::profile
