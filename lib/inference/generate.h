// Text from a trained checkpoint, as `hetu generate` makes it: the checkpoint (its step
// folder, or a run's checkpoints/ folder for the latest one) loaded into the model the
// config stored with it describes, the job's tokenizer, and sampling one token at a time.
// The prompt is run once; every new token then costs one position through the KV cache.
//
//   TrainedModel m = load_trained_model("runs/tiny");
//   auto tok = job_tokenizer(m, "");
//   std::vector<int32_t> ids = prompt_ids(*tok, "Once", m.job.config.model.max_seq_len);
//   Generation g = generate(*m.model, *tok, ids, {.max_tokens = 50}, [](const std::string& piece) { ... });
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lib/config/config.h"
#include "lib/models/language_model.h"
#include "lib/tokenize/tokenizer.h"

namespace hetu::inference {

struct TrainedModel {
  std::string path;                     // the checkpoint file or step folder loaded
  config::LoadedConfig job;             // the job config stored with it
  std::unique_ptr<LanguageModel> model;  // built from job.config.model, the checkpoint's tensors in it
};

// UsageError naming the path when there is no checkpoint, no stored config, or a tensor is
// missing or of another shape than the model's. `overrides` ("table.key=value", as --set) apply
// to the stored config: `hetu generate --vocab` moves data.vocab, so that a tiktoken job whose
// ranks file is elsewhere on this machine still loads.
TrainedModel load_trained_model(const std::string& checkpoint, const std::vector<std::string>& overrides = {});

// The job's tokenizer; `vocab_dir` empty: the job's data.vocab, else $HETU_GPT2_VOCAB (gpt2); a
// tiktoken job uses its data.tokenizer_pattern with the ranks file `vocab_dir` or data.vocab. A job
// trained on pre-tokenized data (data.tokenizer = "none") has none: UsageError.
std::unique_ptr<tokenize::Tokenizer> job_tokenizer(const TrainedModel& trained, std::string vocab_dir);

// The prompt's ids (a newline, or the end-of-text id, for an empty prompt); UsageError when it
// does not leave a position of the model's `context` free.
std::vector<int32_t> prompt_ids(const tokenize::Tokenizer& tokenizer, const std::string& prompt, int64_t context);

struct SampleOptions {
  int64_t max_tokens = 200;
  double temperature = 0.8;  // 0: greedy
  int64_t top_k = 40;        // 0: the whole vocabulary
  uint64_t seed = 1234;
};

struct Generation {
  std::vector<int32_t> generated;  // the new ids, the end-of-text id excluded
  bool context_full = false;       // stopped before max_tokens because the context was full
};

// Samples up to max_tokens ids after `ids` (ids the tokenizer can decode only), ending at the
// tokenizer's end-of-text id or a full context (model.max_seq_len); `on_piece` gets each new
// token's text as it comes.
Generation generate(LanguageModel& model, const tokenize::Tokenizer& tokenizer, const std::vector<int32_t>& ids,
                    const SampleOptions& options, const std::function<void(const std::string&)>& on_piece);

}  // namespace hetu::inference
