// load_job_config(): read the file, apply --set overrides to the TOML tree, read the tables
// into a JobConfig, cap a warm-up longer than the run, validate. See Note [--set overrides].
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "lib/config/config_internal.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace hetu::config {
namespace {

// Note [--set overrides]
// `--set table.key=value` replaces (or adds) one value before anything is read, so an
// override is checked exactly like the file: unknown keys and wrong types are errors that
// name "--set table.key=value" instead of a line. The value is parsed as a TOML value
// (numbers, true/false, "strings", [arrays], {inline tables}); a bare word such as
// `--set model.flavor=124m` is taken as a string, since quoting in shells is a nuisance.
// Path segments may index arrays of tables: `--set parallel.replica[1].micro_batch=2`.

struct PathSegment {
  std::string key;
  std::optional<size_t> index;
};

std::vector<PathSegment> parse_key_path(std::string_view path, const std::string& origin) {
  std::vector<PathSegment> segments;
  for (std::string_view piece : split(path, '.')) {
    piece = trim(piece);
    PathSegment segment;
    size_t bracket = piece.find('[');
    segment.key = std::string(piece.substr(0, bracket));
    if (bracket != std::string_view::npos) {
      std::optional<int64_t> index;
      if (piece.back() == ']') index = parse_int64(piece.substr(bracket + 1, piece.size() - bracket - 2));
      HT_USAGE_CHECK(index && *index >= 0, "{}: bad array index in \"{}\" (write key[0])", origin, piece);
      segment.index = static_cast<size_t>(*index);
    }
    HT_USAGE_CHECK(!segment.key.empty(), "{}: empty key in \"{}\"", origin, path);
    segments.push_back(std::move(segment));
  }
  return segments;
}

bool is_bare_word(std::string_view value) {
  if (value.empty()) return false;
  for (char c : value) {
    if (c == '"' || c == '\'' || c == '[' || c == ']' || c == '{' || c == '}' || c == '=' ||
        c == ' ' || c == '\t' || c == '#') {
      return false;
    }
  }
  return true;
}

toml::table parse_override_value(std::string_view value, const std::string& origin) {
  try {
    return toml::parse("v = " + std::string(value), origin);
  } catch (const toml::parse_error& error) {
    if (is_bare_word(value)) {
      toml::table table;
      table.insert("v", std::string(value));
      return table;
    }
    HT_USAGE_ERROR("{}: the value is not a TOML value ({})", origin, error.description());
  }
}

void apply_override(toml::table& root, std::string_view arg, SourceMap& sources) {
  const std::string origin = "--set " + std::string(arg);
  size_t eq = arg.find('=');
  HT_USAGE_CHECK(eq != std::string_view::npos && eq > 0,
                 "{}: expected table.key=value (e.g. --set training.steps=100)", origin);
  std::string_view path = trim(arg.substr(0, eq));
  std::vector<PathSegment> segments = parse_key_path(path, origin);

  toml::table* table = &root;
  std::string dotted;
  for (size_t i = 0; i + 1 < segments.size(); ++i) {
    const PathSegment& segment = segments[i];
    dotted += (dotted.empty() ? "" : ".") + segment.key;
    toml::node* node = table->get(segment.key);
    if (node == nullptr) {
      HT_USAGE_CHECK(!segment.index, "{}: there is no array [[{}]] to index", origin, dotted);
      table->insert(segment.key, toml::table{});
      sources.record_override(dotted, origin);
      node = table->get(segment.key);
    }
    if (segment.index) {
      toml::array* array = node->as_array();
      HT_USAGE_CHECK(array != nullptr, "{}: {} is not an array of tables", origin, dotted);
      HT_USAGE_CHECK(*segment.index < array->size(), "{}: {} has {} entries, index {} is out of range",
                     origin, dotted, array->size(), *segment.index);
      dotted += "[" + std::to_string(*segment.index) + "]";
      node = array->get(*segment.index);
    }
    table = node->as_table();
    HT_USAGE_CHECK(table != nullptr, "{}: {} is a value, not a table", origin, dotted);
  }
  const PathSegment& last = segments.back();
  HT_USAGE_CHECK(!last.index, "{}: the last key cannot be indexed", origin);
  toml::table parsed = parse_override_value(trim(arg.substr(eq + 1)), origin);
  table->insert_or_assign(last.key, std::move(*parsed.get("v")));
  dotted += (dotted.empty() ? "" : ".") + last.key;
  sources.record_override(dotted, origin);
}

std::string read_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  HT_USAGE_CHECK(fs::exists(path, ec), "{}: no such file", path);
  HT_USAGE_CHECK(!fs::is_directory(path, ec), "{}: is a directory, expected a TOML job file", path);
  std::ifstream in(path, std::ios::binary);
  HT_USAGE_CHECK(in.good(), "{}: cannot open for reading", path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A warm-up longer than the run (a shipped job file tried with --set training.steps=10) is
// capped at the run's length, with a warning naming the key; validation sees the capped value.
std::optional<std::string> cap_warmup(JobConfig& c, const SourceMap& sources) {
  LrScheduleSection& s = c.lr_schedule;
  if (c.training.steps < 1 || s.warmup_steps <= c.training.steps) return std::nullopt;
  const std::string key = "lr_schedule.warmup_steps";
  std::string warning = fmt::format("{}: {}: warmup_steps = {} exceeds training.steps = {}; capped at {}",
                                    sources.where(key), key, s.warmup_steps, c.training.steps, c.training.steps);
  s.warmup_steps = c.training.steps;
  return warning;
}

}  // namespace

toml::table parse_toml_text(std::string_view text, const std::string& source_name) {
  try {
    return toml::parse(text, source_name);
  } catch (const toml::parse_error& error) {
    HT_USAGE_ERROR("{}:{}:{}: TOML syntax error: {}", source_name, error.source().begin.line,
                   error.source().begin.column, error.description());
  }
}

LoadedConfig load_job_config_text(std::string_view text, const std::string& source_name,
                                  const std::vector<std::string>& overrides) {
  toml::table root = parse_toml_text(text, source_name);
  SourceMap sources(source_name);
  for (const std::string& arg : overrides) apply_override(root, arg, sources);

  LoadedConfig loaded{JobConfig{}, DeviceCatalog::builtin(), {}};
  loaded.config.source = source_name;
  TableReader reader(root, "", sources);
  read_job_config(reader, loaded.config, loaded.catalog);
  const std::optional<std::string> capped = cap_warmup(loaded.config, sources);
  loaded.warnings = validate_job_config(loaded.config, loaded.catalog, sources);
  if (capped) loaded.warnings.insert(loaded.warnings.begin(), *capped);
  return loaded;
}

LoadedConfig load_job_config(const std::string& path, const std::vector<std::string>& overrides) {
  return load_job_config_text(read_file(path), path, overrides);
}

}  // namespace hetu::config
