// `hetu ckpt convert IN OUT [--to hetu|hf|llmc] [--dtype f32|bf16] [--max-shard-size 5GB]`:
// load any checkpoint format into ModelWeights, save it in another. Also the helpers every
// format shares: format detection, the expected parameter list, output folder checks.
#include <fmt/core.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "app/cmd_ckpt.h"
#include "app/commands.h"
#include "lib/io/llmc_checkpoint.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"
#include "models/model_family.h"

namespace hetu::app {

namespace fs = std::filesystem;

std::string_view to_string(CkptFormat format) {
  switch (format) {
    case CkptFormat::hetu:
      return "hetu";
    case CkptFormat::hf:
      return "hf";
    case CkptFormat::llmc:
      return "llmc";
  }
  return "?";
}

std::map<std::string, Shape> expected_parameters(const ModelConfig& m) { return model_family(m.arch).parameter_shapes(m); }

void check_parameters(const ModelWeights& weights, const std::string& source) {
  const std::map<std::string, Shape> expected = expected_parameters(weights.model);
  std::vector<std::string> problems;
  for (const auto& [name, shape] : expected) {
    auto it = weights.params.find(name);
    if (it == weights.params.end()) {
      problems.push_back(fmt::format("tensor {} {} is missing", name, shape_str(shape)));
    } else if (it->second.shape() != shape) {
      problems.push_back(fmt::format("tensor {} has shape {}, the model needs {}", name, shape_str(it->second.shape()),
                                     shape_str(shape)));
    } else if (!is_floating(it->second.dtype())) {
      problems.push_back(
          fmt::format("tensor {} has dtype {}, expected a float type", name, to_string(it->second.dtype())));
    }
  }
  for (const auto& [name, tensor] : weights.params) {
    if (!expected.count(name))
      problems.push_back(fmt::format("tensor {} {} is not a parameter of this model", name, shape_str(tensor.shape())));
  }
  if (problems.empty()) return;
  if (problems.size() > 10) {
    const size_t more = problems.size() - 10;
    problems.resize(10);
    problems.push_back(fmt::format("... and {} more", more));
  }
  std::string message = fmt::format("{}: the tensors do not match a {} of {} layers, hidden {}:", source,
                                    to_string(weights.model.arch), weights.model.layers, weights.model.hidden);
  for (const std::string& p : problems) message += "\n  " + p;
  HT_USAGE_ERROR("{}", message);
}

CkptFormat detect_format(const std::string& path) {
  const fs::path p(path);
  HT_USAGE_CHECK(fs::exists(p), "{}: no such checkpoint file or folder", path);
  if (fs::is_directory(p)) {
    if (fs::exists(p / "config.json")) return CkptFormat::hf;
    const bool has_safetensors = fs::exists(p / "model.safetensors") || fs::exists(p / "model.safetensors.index.json");
    HT_USAGE_CHECK(!has_safetensors,
                   "{}: safetensors weights without a config.json (hetu needs it for the model's shape)", path);
    return CkptFormat::hetu;  // step, checkpoints or run folder (resolve_hetu_checkpoint says if not)
  }
  if (p.extension() == ".h5") return CkptFormat::hetu;
  if (p.extension() == ".safetensors") return CkptFormat::hf;
  std::ifstream in(p, std::ios::binary);
  int32_t magic = 0;
  in.read(reinterpret_cast<char*>(&magic), sizeof(magic));
  if (in && magic == io::kLlmcMagic) return CkptFormat::llmc;
  HT_USAGE_ERROR(
      "{}: not a checkpoint hetu recognises (a hetu step folder or .h5, a HF folder with config.json or a "
      ".safetensors file, or an llm.c .bin file)",
      path);
}

ModelWeights load_weights(const std::string& path, CkptFormat format) {
  ModelWeights w;
  switch (format) {
    case CkptFormat::hetu:
      w = load_hetu_weights(path);
      break;
    case CkptFormat::hf:
      w = load_hf_weights(path);
      break;
    case CkptFormat::llmc:
      w = load_llmc_weights(path);
      break;
  }
  check_parameters(w, path);
  return w;
}

void prepare_output_folder(const std::string& out) {
  const fs::path p(out);
  if (fs::exists(p)) {
    HT_USAGE_CHECK(fs::is_directory(p), "{}: exists and is not a folder", out);
    HT_USAGE_CHECK(fs::is_empty(p), "{}: exists and is not empty; convert writes into a new or empty folder", out);
    return;
  }
  std::error_code ec;
  fs::create_directories(p, ec);
  HT_USAGE_CHECK(!ec, "{}: cannot create the folder: {}", out, ec.message());
}

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
  const CkptFormat from = detect_format(options.input);
  CkptFormat to = CkptFormat::hetu;
  if (options.to == "hf") to = CkptFormat::hf;
  if (options.to == "llmc") to = CkptFormat::llmc;
  if (options.to.empty()) {
    HT_USAGE_CHECK(from != CkptFormat::hetu,
                   "{}: a hetu checkpoint; say what to convert it to with --to hf or --to llmc", options.input);
  }
  HT_USAGE_CHECK(from != to, "{} is already in {} format (--to {})", options.input, to_string(from), to_string(to));
  SaveOptions save;
  save.dtype = options.dtype == "bf16" ? DType::bf16 : DType::f32;
  save.max_shard_bytes = parse_size(options.max_shard_size);
  HT_USAGE_CHECK(!fs::exists(options.output) || (fs::is_directory(options.output) && fs::is_empty(options.output)),
                 "{}: already exists; convert writes a new file or into a new or empty folder", options.output);

  const ModelWeights w = load_weights(options.input, from);
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
    case CkptFormat::hetu:
      written.push_back(save_hetu_weights(options.output, w, save));
      break;
    case CkptFormat::hf:
      written = save_hf_weights(options.output, w, save);
      break;
    case CkptFormat::llmc:
      save_llmc_weights(options.output, w, save);
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
