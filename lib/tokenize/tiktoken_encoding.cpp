// The built-in tiktoken encodings (see tiktoken_encoding.h). cl100k/o200k: the pat_str and
// special tokens of OpenAI's tiktoken (tests/data/tiktoken/*.json). llama3: the pattern and
// special-token list of Meta's Llama 3.1 tokenizer.py (reserved tokens 0, 1, 2 among the
// named ones, then 3..247 up to id 128255).
#include "lib/tokenize/tiktoken_encoding.h"

#include <algorithm>

#include "lib/util/error.h"

namespace hetu::tokenize {
namespace {

// The contractions as cl100k_base and o200k_base spell them (each case spelled out).
#define HT_CONTRACTIONS "'s|'S|'t|'T|'re|'rE|'Re|'RE|'ve|'vE|'Ve|'VE|'m|'M|'ll|'lL|'Ll|'LL|'d|'D"

TiktokenEncoding cl100k() {
  return {"cl100k",
          "(" HT_CONTRACTIONS R"()|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
          {{"<|endoftext|>", 100257},
           {"<|fim_prefix|>", 100258},
           {"<|fim_middle|>", 100259},
           {"<|fim_suffix|>", 100260},
           {"<|endofprompt|>", 100276}},
          "<|endoftext|>"};
}

TiktokenEncoding o200k() {
  return {"o200k",
          R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+()" HT_CONTRACTIONS
          R"()?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*()" HT_CONTRACTIONS
          R"()?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
          {{"<|endoftext|>", 199999}, {"<|endofprompt|>", 200018}},
          "<|endoftext|>"};
}

#undef HT_CONTRACTIONS

TiktokenEncoding llama3() {
  constexpr int32_t kFirstSpecial = 128000;
  constexpr int32_t kSpecials = 256;
  const std::vector<std::string> named = {
      "<|begin_of_text|>",          "<|end_of_text|>",   "<|reserved_special_token_0|>",
      "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>",
      "<|start_header_id|>",        "<|end_header_id|>", "<|eom_id|>",
      "<|eot_id|>",                 "<|python_tag|>"};
  TiktokenEncoding e{"llama3",
                     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
                     {},
                     "<|end_of_text|>"};
  for (size_t i = 0; i < named.size(); ++i) {
    e.special_tokens.emplace_back(named[i], kFirstSpecial + static_cast<int32_t>(i));
  }
  for (int32_t i = static_cast<int32_t>(named.size()); i < kSpecials; ++i) {
    e.special_tokens.emplace_back("<|reserved_special_token_" + std::to_string(i - 8) + "|>", kFirstSpecial + i);
  }
  return e;
}

}  // namespace

int64_t TiktokenEncoding::id_range() const {
  int64_t range = 0;
  for (const auto& [text, id] : special_tokens) range = std::max<int64_t>(range, int64_t{id} + 1);
  return range;
}

const TiktokenEncoding& builtin_tiktoken_encoding(std::string_view name) {
  static const TiktokenEncoding kCl100k = cl100k(), kO200k = o200k(), kLlama3 = llama3();
  if (name == "cl100k" || name == "cl100k_base") return kCl100k;
  if (name == "o200k" || name == "o200k_base") return kO200k;
  if (name == "llama3") return kLlama3;
  HT_USAGE_ERROR("unknown tiktoken pattern '{}' (expected {})", name, builtin_tiktoken_names());
}

std::string builtin_tiktoken_names() { return "cl100k, o200k, llama3"; }

}  // namespace hetu::tokenize
