// Strict, typed reading of one TOML table with error messages that name the file, the
// line and the dotted key. Every key a reader is asked about counts as known; finish()
// rejects the rest ("unknown key 'lrr' in [optimizer] ... did you mean 'lr'?").
// Internal to lib/config: only the parsing .cpp files include this (and TOML++).
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace hetu::config {

// Where each dotted key came from: "job.toml:12" or "--set training.steps=5".
class SourceMap {
 public:
  explicit SourceMap(std::string file) : file_(std::move(file)) {}
  const std::string& file() const { return file_; }
  void record(const std::string& key, const toml::node& node);
  void record_override(const std::string& key, std::string origin);
  // The location of `key`, or of its closest recorded parent, or the file name.
  std::string where(const std::string& key) const;

 private:
  std::string file_;
  std::map<std::string, std::string> locations_;
};

// Throws UsageError "<where>: <key>: <message>".
[[noreturn]] void config_error(const SourceMap& sources, const std::string& key,
                               const std::string& message);

class TableReader {
 public:
  // `path` is the dotted name of this table ("" for the root, "parallel.replica[1]").
  TableReader(const toml::table& table, std::string path, SourceMap& sources);

  const std::string& path() const { return path_; }
  SourceMap& sources() const { return *sources_; }
  std::string key_path(std::string_view key) const;
  bool has(std::string_view key);

  std::optional<int64_t> get_int(std::string_view key);
  std::optional<double> get_number(std::string_view key);  // integer or float
  std::optional<std::string> get_string(std::string_view key);
  std::optional<bool> get_bool(std::string_view key);
  std::optional<std::vector<double>> get_number_array(std::string_view key);
  std::optional<std::vector<std::vector<double>>> get_number_arrays(std::string_view key);  // [[1, 2.0], ...]
  std::optional<TableReader> get_table(std::string_view key);
  std::vector<TableReader> get_table_array(std::string_view key);  // [[key]]

  int64_t require_int(std::string_view key);
  std::string require_string(std::string_view key);

  // Reads a string that must be one of `choices`; returns its index.
  std::optional<size_t> get_choice(std::string_view key, const std::vector<std::string>& choices);

  // Rejects keys never asked about. Call after reading every key.
  void finish() const;
  [[noreturn]] void fail(std::string_view key, const std::string& message) const;

 private:
  const toml::node* lookup(std::string_view key);
  [[noreturn]] void wrong_type(std::string_view key, const toml::node& node,
                               std::string_view expected) const;

  const toml::table* table_;
  std::string path_;
  SourceMap* sources_;
  std::set<std::string, std::less<>> known_;
};

// Human name of a node's type and a short rendering of its value, for messages.
std::string describe_node(const toml::node& node);

}  // namespace hetu::config
