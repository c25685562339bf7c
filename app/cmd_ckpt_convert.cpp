// `hetu ckpt convert IN OUT [--to hetu|hf|llmc] [--dtype f32|bf16] [--max-shard-size 5GB]`:
// load any checkpoint format into ModelWeights, save it in another (lib/weights/model_weights.h).
#include <fmt/core.h>

#include <cstdio>
#include <filesystem>

#include "app/commands.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"
#include "lib/weights/model_weights.h"

namespace hetu::app {

namespace fs = std::filesystem;

namespace {

// "5GB", "500MB", "4KiB", "123" -> bytes (decimal units as HF's max_shard_size; KiB... binary).
uint64_t parse_size(const std::string& text) {
  size_t digits = 0;
  uint64_t number = 0;
  for (; digits < text.size() && digits < 15 && text[digits] >= '0' && text[digits] <= '9'; ++digits) {
    number = number * 10 + static_cast<uint64_t>(text[digits] - '0');
  }
  const std::string unit = text.substr(digits);
  const std::map<std::string, uint64_t> units = {{"", 1},          {"B", 1},           {"KB", 1000},
                                                 {"MB", 1000000},  {"GB", 1000000000}, {"KiB", 1 << 10},
                                                 {"MiB", 1 << 20}, {"GiB", 1 << 30}};
  auto it = units.find(unit);
  HT_USAGE_CHECK(number >= 1 && it != units.end() && number <= (uint64_t{1} << 50) / it->second,
                 "--max-shard-size: expected a size like 5GB, 500MB, 2GiB or a byte count, got '{}'", text);
  return number * it->second;
}

// Bytes of a file, or of every file under a folder.
uint64_t bytes_under(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return fs::file_size(path, ec);
  uint64_t total = 0;
  for (const auto& entry : fs::recursive_directory_iterator(path, ec)) {
    if (entry.is_regular_file(ec)) total += entry.file_size(ec);
  }
  return total;
}

std::string human_bytes(uint64_t bytes) {
  if (bytes >= 1000000000) return fmt::format("{:.2f} GB", static_cast<double>(bytes) / 1e9);
  if (bytes >= 1000000) return fmt::format("{:.2f} MB", static_cast<double>(bytes) / 1e6);
  return fmt::format("{} bytes", bytes);
}

}  // namespace

int run_ckpt_convert(const CkptConvertOptions& options) {
  const weights::CkptFormat from = weights::detect_format(options.input);
  weights::CkptFormat to = weights::CkptFormat::hetu;
  if (options.to == "hf") to = weights::CkptFormat::hf;
  if (options.to == "llmc") to = weights::CkptFormat::llmc;
  if (options.to.empty()) {
    HT_USAGE_CHECK(from != weights::CkptFormat::hetu,
                   "{}: a hetu checkpoint; say what to convert it to with --to hf or --to llmc", options.input);
  }
  HT_USAGE_CHECK(from != to, "{} is already in {} format (--to {})", options.input, to_string(from), to_string(to));
  weights::SaveOptions save;
  save.dtype = options.dtype == "bf16" ? DType::bf16 : DType::f32;
  save.max_shard_bytes = parse_size(options.max_shard_size);
  HT_USAGE_CHECK(!fs::exists(options.output) || (fs::is_directory(options.output) && fs::is_empty(options.output)),
                 "{}: already exists; convert writes a new file or into a new or empty folder", options.output);

  const weights::ModelWeights w = weights::load_weights(options.input, from);
  const ModelConfig& m = w.model;
  uint64_t elements = 0;
  for (const auto& [name, t] : w.params) elements += static_cast<uint64_t>(t.numel());
  std::string report = fmt::format(
      "read {} ({}): {}, {} layers, hidden {}, {} heads ({} kv), vocab {}, step {}; {} tensors, "
      "{} parameters\n",
      options.input, to_string(from), to_string(m.arch), m.layers, m.hidden, m.heads, m.kv_heads, m.vocab, w.step,
      w.params.size(), elements);
  for (const std::string& note : w.notes) report += fmt::format("note: {}\n", note);
  std::fputs(report.c_str(), stdout);
  std::fflush(stdout);

  std::vector<std::string> written;
  switch (to) {
    case weights::CkptFormat::hetu:
      written.push_back(weights::save_hetu_weights(options.output, w, save));
      break;
    case weights::CkptFormat::hf:
      written = weights::save_hf_weights(options.output, w, save);
      break;
    case weights::CkptFormat::llmc:
      weights::save_llmc_weights(options.output, w, save);
      written.push_back(options.output);
      break;
  }
  report = fmt::format("wrote {} ({}, {}): {}\n", options.output, to_string(to), to_string(save.dtype),
                       human_bytes(bytes_under(options.output)));
  for (const std::string& file : written) report += fmt::format("  {}\n", file);
  std::fputs(report.c_str(), stdout);
  return 0;
}

}  // namespace hetu::app
