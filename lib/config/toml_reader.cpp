// TableReader: strict typed access to a TOML table, with file:line in every error.
#include "lib/config/toml_reader.h"

#include <algorithm>
#include <sstream>

#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace hetu::config {
namespace {

std::string location_of(const toml::node& node, const std::string& fallback_file) {
  const toml::source_region& src = node.source();
  std::string file = src.path ? *src.path : fallback_file;
  if (file.rfind("--set", 0) == 0) return file;
  if (src.begin.line == 0) return file;
  return file + ":" + std::to_string(src.begin.line);
}

// Levenshtein distance, for "did you mean" suggestions on unknown keys.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string table_label(const std::string& path) {
  return path.empty() ? "the top level" : "[" + path + "]";
}

}  // namespace

void SourceMap::record(const std::string& key, const toml::node& node) {
  // A value set by --set keeps naming the flag, even where TOML++ has no source for it.
  auto it = locations_.find(key);
  if (it != locations_.end() && it->second.rfind("--set", 0) == 0) return;
  locations_[key] = location_of(node, file_);
}

void SourceMap::record_override(const std::string& key, std::string origin) {
  locations_[key] = std::move(origin);
}

std::string SourceMap::where(const std::string& key) const {
  std::string probe = key;
  while (!probe.empty()) {
    auto it = locations_.find(probe);
    if (it != locations_.end()) return it->second;
    size_t cut = probe.find_last_of(".[");
    if (cut == std::string::npos) break;
    probe.resize(cut);
  }
  return file_;
}

void config_error(const SourceMap& sources, const std::string& key, const std::string& message) {
  HT_USAGE_ERROR("{}: {}: {}", sources.where(key), key, message);
}

std::string describe_node(const toml::node& node) {
  std::ostringstream value;
  switch (node.type()) {
    case toml::node_type::string: return "string \"" + std::string(*node.value<std::string>()) + "\"";
    case toml::node_type::integer: return "integer " + std::to_string(*node.value<int64_t>());
    case toml::node_type::floating_point: value << "float " << *node.value<double>(); return value.str();
    case toml::node_type::boolean: return *node.value<bool>() ? "boolean true" : "boolean false";
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    case toml::node_type::none: return "nothing";
  }
  return "a value";
}

TableReader::TableReader(const toml::table& table, std::string path, SourceMap& sources)
    : table_(&table), path_(std::move(path)), sources_(&sources) {
  if (!path_.empty() && table.source().begin.line != 0) sources_->record(path_, table);
}

std::string TableReader::key_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

const toml::node* TableReader::lookup(std::string_view key) {
  known_.emplace(key);
  const toml::node* node = table_->get(key);
  if (node != nullptr) sources_->record(key_path(key), *node);
  return node;
}

bool TableReader::has(std::string_view key) { return lookup(key) != nullptr; }

void TableReader::fail(std::string_view key, const std::string& message) const {
  config_error(*sources_, key_path(key), message);
}

void TableReader::wrong_type(std::string_view key, const toml::node& node,
                             std::string_view expected) const {
  fail(key, "expected " + std::string(expected) + ", got " + describe_node(node));
}

std::optional<int64_t> TableReader::get_int(std::string_view key) {
  const toml::node* node = lookup(key);
  if (node == nullptr) return std::nullopt;
  if (!node->is_integer()) wrong_type(key, *node, "an integer");
  return *node->value<int64_t>();
}

std::optional<double> TableReader::get_number(std::string_view key) {
  const toml::node* node = lookup(key);
  if (node == nullptr) return std::nullopt;
  if (!node->is_number()) wrong_type(key, *node, "a number");
  return *node->value<double>();
}

std::optional<std::string> TableReader::get_string(std::string_view key) {
  const toml::node* node = lookup(key);
  if (node == nullptr) return std::nullopt;
  if (!node->is_string()) wrong_type(key, *node, "a string");
  return std::string(*node->value<std::string>());
}

std::optional<bool> TableReader::get_bool(std::string_view key) {
  const toml::node* node = lookup(key);
  if (node == nullptr) return std::nullopt;
  if (!node->is_boolean()) wrong_type(key, *node, "a boolean (true or false)");
  return *node->value<bool>();
}

std::optional<std::vector<double>> TableReader::get_number_array(std::string_view key) {
  const toml::node* node = lookup(key);
  if (node == nullptr) return std::nullopt;
  const toml::array* array = node->as_array();
  if (array == nullptr) wrong_type(key, *node, "an array of numbers");
  std::vector<double> values;
  for (const toml::node& element : *array) {
    if (!element.is_number()) {
      fail(key, "expected an array of numbers, but an element is " + describe_node(element));
    }
    values.push_back(*element.value<double>());
  }
  return values;
}

std::optional<std::vector<std::vector<double>>> TableReader::get_number_arrays(std::string_view key) {
  const toml::node* node = lookup(key);
  if (node == nullptr) return std::nullopt;
  const toml::array* array = node->as_array();
  if (array == nullptr) wrong_type(key, *node, "an array of arrays of numbers");
  std::vector<std::vector<double>> values;
  for (const toml::node& element : *array) {
    const toml::array* inner = element.as_array();
    if (inner == nullptr) fail(key, "expected an array of arrays of numbers, but an element is " + describe_node(element));
    values.emplace_back();
    for (const toml::node& number : *inner) {
      if (!number.is_number()) fail(key, "expected arrays of numbers, but an element is " + describe_node(number));
      values.back().push_back(*number.value<double>());
    }
  }
  return values;
}

std::optional<TableReader> TableReader::get_table(std::string_view key) {
  const toml::node* node = lookup(key);
  if (node == nullptr) return std::nullopt;
  const toml::table* table = node->as_table();
  if (table == nullptr) wrong_type(key, *node, "a table");
  return TableReader(*table, key_path(key), *sources_);
}

std::vector<TableReader> TableReader::get_table_array(std::string_view key) {
  const toml::node* node = lookup(key);
  std::vector<TableReader> readers;
  if (node == nullptr) return readers;
  const toml::array* array = node->as_array();
  if (array == nullptr) wrong_type(key, *node, "an array of tables ([[" + key_path(key) + "]])");
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::table* table = (*array)[i].as_table();
    std::string element_path = key_path(key) + "[" + std::to_string(i) + "]";
    if (table == nullptr) {
      config_error(*sources_, element_path,
                   "expected a table ([[" + key_path(key) + "]]), got " + describe_node((*array)[i]));
    }
    readers.emplace_back(*table, element_path, *sources_);
  }
  return readers;
}

int64_t TableReader::require_int(std::string_view key) {
  std::optional<int64_t> value = get_int(key);
  if (!value) fail(key, "required key is missing (an integer)");
  return *value;
}

std::string TableReader::require_string(std::string_view key) {
  std::optional<std::string> value = get_string(key);
  if (!value) fail(key, "required key is missing (a string)");
  return *value;
}

std::optional<size_t> TableReader::get_choice(std::string_view key,
                                              const std::vector<std::string>& choices) {
  std::optional<std::string> value = get_string(key);
  if (!value) return std::nullopt;
  auto it = std::find(choices.begin(), choices.end(), *value);
  if (it == choices.end()) {
    fail(key, "unknown value \"" + *value + "\" (expected one of: " + join(choices, ", ") + ")");
  }
  return static_cast<size_t>(it - choices.begin());
}

void TableReader::finish() const {
  for (const auto& [key, node] : *table_) {
    if (known_.count(key.str()) != 0) continue;
    std::string message = "unknown key '" + std::string(key.str()) + "' in " + table_label(path_);
    std::string best;
    size_t best_distance = 3;  // suggest only close matches
    for (const std::string& known : known_) {
      size_t distance = edit_distance(key.str(), known);
      if (distance < best_distance) {
        best_distance = distance;
        best = known;
      }
    }
    if (!best.empty()) {
      message += " (did you mean '" + best + "'?)";
    } else {
      std::vector<std::string> names(known_.begin(), known_.end());
      message += " (known keys: " + join(names, ", ") + ")";
    }
    std::string key_name = key_path(key.str());
    sources_->record(key_name, node);
    config_error(*sources_, key_name, message);
  }
}

}  // namespace hetu::config
