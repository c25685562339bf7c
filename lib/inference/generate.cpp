// load_trained_model, job_tokenizer, prompt_ids and generate (generate.h).
#include "lib/inference/generate.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "lib/autograd/grad_mode.h"
#include "lib/checkpoint/checkpoint.h"
#include "lib/core/rng.h"
#include "lib/inference/sampling.h"
#include "lib/util/error.h"

namespace hetu::inference {
namespace {

tokenize::TokenizerKind tokenizer_kind(config::Tokenizer t, const std::string& checkpoint) {
  HT_USAGE_CHECK(t != config::Tokenizer::none, "{}: the job used pre-tokenized data (data.tokenizer = \"none\"): hetu "
                 "cannot turn a prompt into its ids", checkpoint);
  if (t == config::Tokenizer::tiktoken) return tokenize::TokenizerKind::tiktoken;
  return t == config::Tokenizer::byte ? tokenize::TokenizerKind::byte : tokenize::TokenizerKind::gpt2;
}

}  // namespace

TrainedModel load_trained_model(const std::string& checkpoint, const std::vector<std::string>& overrides) {
  namespace fs = std::filesystem;
  // A step folder, or a run folder / checkpoints folder whose latest checkpoint is used.
  fs::path chosen(checkpoint);
  HT_USAGE_CHECK(fs::exists(chosen), "{}: no such checkpoint or folder", checkpoint);
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
  TrainedModel out{path, config::load_job_config_text(stored->second, path + " (stored config)", overrides), nullptr};
  const config::JobConfig& c = out.job.config;
  out.model = build_model(c.model, c.job.seed);
  for (const nn::NamedParameter& p : out.model->named_parameters()) {
    auto it = data.tensors.find(p.name);
    HT_USAGE_CHECK(it != data.tensors.end(), "{}: tensor {} is missing", path, p.name);
    HT_USAGE_CHECK(it->second.shape() == p.tensor.shape(), "{}: tensor {} has shape {}, the model needs {}", path, p.name,
                   shape_str(it->second.shape()), shape_str(p.tensor.shape()));
    p.tensor.copy_from(it->second);
  }
  return out;
}

std::unique_ptr<tokenize::Tokenizer> job_tokenizer(const TrainedModel& trained, std::string vocab_dir) {
  const config::JobConfig& c = trained.job.config;
  if (vocab_dir.empty()) vocab_dir = c.data.vocab;
  const tokenize::TokenizerKind kind = tokenizer_kind(c.data.tokenizer, trained.path);
  if (kind == tokenize::TokenizerKind::tiktoken) {
    return tokenize::make_tokenizer(kind, vocab_dir, c.data.tokenizer_pattern);
  }
  if (vocab_dir.empty() && std::getenv("HETU_GPT2_VOCAB") != nullptr) vocab_dir = std::getenv("HETU_GPT2_VOCAB");
  return tokenize::make_tokenizer(kind, vocab_dir);
}

std::vector<int32_t> prompt_ids(const tokenize::Tokenizer& tokenizer, const std::string& prompt, int64_t context) {
  std::vector<int32_t> ids = tokenizer.encode(prompt);
  if (ids.empty()) ids.push_back(tokenizer.eot_id() >= 0 ? tokenizer.eot_id() : 10);  // start from a newline
  HT_USAGE_CHECK(static_cast<int64_t>(ids.size()) < context, "the prompt is {} tokens; the model's context is {}",
                 ids.size(), context);
  return ids;
}

Generation generate(LanguageModel& model, const tokenize::Tokenizer& tokenizer, const std::vector<int32_t>& ids,
                    const SampleOptions& options, const std::function<void(const std::string&)>& on_piece) {
  const int64_t limit = model.config().max_seq_len;
  autograd::NoGradGuard no_grad;
  KVCache cache;
  const CounterRng rng(options.seed, "generate");
  Tensor input = tensor_from(ids, {1, static_cast<int64_t>(ids.size())});
  Generation out;
  for (int64_t i = 0; i < options.max_tokens && cache.length + input.size(1) <= limit; ++i) {
    const Tensor logits = model.forward(input, &cache).contiguous();  // (1, T, V)
    const int64_t V = logits.size(-1);
    const float* last = logits.data<float>() + (logits.size(1) - 1) * V;
    // Only ids the tokenizer can decode (a model's vocab may be larger than the tokenizer's).
    const int64_t decodable = std::min<int64_t>(V, tokenizer.vocab_size());
    const int32_t next = sample_token(last, decodable, options.temperature, options.top_k, rng.uniform(i));
    if (next == tokenizer.eot_id()) break;
    out.generated.push_back(next);
    on_piece(tokenizer.decode({next}));
    input = tensor_from(std::vector<int32_t>{next}, {1, 1});
  }
  out.context_full = static_cast<int64_t>(out.generated.size()) < options.max_tokens && cache.length + input.size(1) > limit;
  return out;
}

}  // namespace hetu::inference
