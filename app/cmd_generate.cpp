// `hetu generate CHECKPOINT --prompt "..." --max-tokens N --temperature T --top-k K --seed S`:
// loads a checkpoint (its step folder, or a run's checkpoints/ folder for the latest one),
// rebuilds the model from the config stored with it, and samples text. The prompt is run
// once; every new token then costs one position through the KV cache.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fmt/core.h>

#include "app/commands.h"
#include "lib/models/sampling.h"
#include "lib/autograd/grad_mode.h"
#include "lib/core/rng.h"
#include "lib/checkpoint/checkpoint.h"
#include "lib/tokenize/tokenizer.h"
#include "lib/ops/ops.h"
#include "lib/models/language_model.h"

namespace hetu::app {
namespace {

tokenize::TokenizerKind tokenizer_kind(config::Tokenizer t, const std::string& checkpoint) {
  HT_USAGE_CHECK(t != config::Tokenizer::none, "{}: the job used pre-tokenized data (data.tokenizer = \"none\"): hetu "
                 "cannot turn a prompt into its ids", checkpoint);
  return t == config::Tokenizer::byte ? tokenize::TokenizerKind::byte : tokenize::TokenizerKind::gpt2;
}

}  // namespace

int run_generate(const GenerateOptions& options) {
  namespace fs = std::filesystem;
  HT_USAGE_CHECK(options.max_tokens >= 1, "--max-tokens must be >= 1, got {}", options.max_tokens);
  HT_USAGE_CHECK(options.temperature >= 0, "--temperature must be >= 0, got {}", options.temperature);
  ops::set_num_threads(options.threads);
  // A step folder, or a run folder / checkpoints folder whose latest checkpoint is used.
  fs::path chosen(options.checkpoint);
  HT_USAGE_CHECK(fs::exists(chosen), "{}: no such checkpoint or folder", options.checkpoint);
  if (fs::exists(chosen / "checkpoints")) chosen /= "checkpoints";
  if (!fs::exists(chosen / "checkpoint.h5") && chosen.extension() != ".h5") {
    std::optional<std::string> latest = checkpoint::CheckpointManager(chosen.string(), 1).latest();
    HT_USAGE_CHECK(latest.has_value(), "{}: no checkpoint in this folder", chosen.string());
    chosen = *latest;
  }
  const std::string path = chosen.string();
  const checkpoint::CheckpointManager manager(chosen.parent_path().string(), 1);
  const checkpoint::CheckpointData data = manager.load(path);
  auto stored = data.metadata.find("config");
  HT_USAGE_CHECK(stored != data.metadata.end(), "{}: the checkpoint holds no job config", path);
  const config::LoadedConfig loaded = config::load_job_config_text(stored->second, path + " (stored config)", {});
  const config::JobConfig& c = loaded.config;

  std::unique_ptr<LanguageModel> model = build_model(c.model, c.job.seed);
  for (const nn::NamedParameter& p : model->named_parameters()) {
    auto it = data.tensors.find(p.name);
    HT_USAGE_CHECK(it != data.tensors.end(), "{}: tensor {} is missing", path, p.name);
    HT_USAGE_CHECK(it->second.shape() == p.tensor.shape(), "{}: tensor {} has shape {}, the model needs {}", path, p.name,
                   shape_str(it->second.shape()), shape_str(p.tensor.shape()));
    p.tensor.copy_from(it->second);
  }
  std::string vocab_dir = options.vocab_dir.empty() ? c.data.vocab : options.vocab_dir;
  if (vocab_dir.empty() && std::getenv("HETU_GPT2_VOCAB") != nullptr) vocab_dir = std::getenv("HETU_GPT2_VOCAB");
  const std::unique_ptr<tokenize::Tokenizer> tokenizer = tokenize::make_tokenizer(tokenizer_kind(c.data.tokenizer, path), vocab_dir);

  std::vector<int32_t> ids = tokenizer->encode(options.prompt);
  if (ids.empty()) ids.push_back(tokenizer->eot_id() >= 0 ? tokenizer->eot_id() : 10);  // start from a newline
  const int64_t limit = c.model.max_seq_len;
  HT_USAGE_CHECK(static_cast<int64_t>(ids.size()) < limit, "the prompt is {} tokens; the model's context is {}", ids.size(), limit);

  autograd::NoGradGuard no_grad;
  KVCache cache;
  const CounterRng rng(options.seed, "generate");
  Tensor input = tensor_from(ids, {1, static_cast<int64_t>(ids.size())});
  std::vector<int32_t> generated;
  std::fputs(options.prompt.c_str(), stdout);
  for (int64_t i = 0; i < options.max_tokens && cache.length + input.size(1) <= limit; ++i) {
    const Tensor logits = model->forward(input, &cache).contiguous();  // (1, T, V)
    const int64_t V = logits.size(-1);
    const float* last = logits.data<float>() + (logits.size(1) - 1) * V;
    // Only ids the tokenizer can decode (a model's vocab may be larger than the tokenizer's).
    const int64_t decodable = std::min<int64_t>(V, tokenizer->vocab_size());
    const int32_t next = sample_token(last, decodable, options.temperature, options.top_k, rng.uniform(i));
    if (next == tokenizer->eot_id()) break;
    generated.push_back(next);
    const std::string piece = tokenizer->decode({next});
    std::fputs(piece.c_str(), stdout);
    std::fflush(stdout);
    input = tensor_from(std::vector<int32_t>{next}, {1, 1});
  }
  std::fputs("\n", stdout);
  if (static_cast<int64_t>(generated.size()) < options.max_tokens && cache.length + input.size(1) > limit) {
    spdlog::warn("stopped after {} of {} tokens: the model's context is {} positions (model.max_seq_len), and the "
                 "prompt took {}", generated.size(), options.max_tokens, limit, ids.size());
  }
  return 0;
}

}  // namespace hetu::app
