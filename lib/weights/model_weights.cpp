// The parts of ModelWeights every format shares (model_weights.h): the format's name and its
// detection from a path, the expected parameter list and its check, loading any format, and the
// output folder checks.
#include <fmt/core.h>

#include <filesystem>
#include <fstream>

#include "lib/weights/model_weights.h"
#include "lib/checkpoint/llmc_checkpoint.h"
#include "lib/models/model_family.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace hetu::weights {

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
  if (in && magic == checkpoint::kLlmcMagic) return CkptFormat::llmc;
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

}  // namespace hetu::weights
