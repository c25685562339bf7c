// `hetu tokenize` (see cmd_tokenize.h): reads all of stdin, then writes stdout in one of four
// modes: encode / decode, plain / --jsonl. Plain decode writes the bytes exactly, so
// `hetu tokenize | hetu tokenize --decode` returns the input byte for byte. JSON strings hold
// only Unicode, so --jsonl --decode writes U+FFFD for bytes that are not valid UTF-8 (ids
// that split a character), as Python's errors="replace" would.
#include "app/cmd_tokenize.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fmt/core.h>
#include <iterator>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "lib/tokenize/tiktoken_encoding.h"
#include "lib/tokenize/tokenizer.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace hetu::app {
namespace {

std::unique_ptr<tokenize::Tokenizer> open_tokenizer(const TokenizeOptions& options) {
  HT_USAGE_CHECK(options.pattern.empty() || options.tokenizer == "tiktoken",
                 "--pattern is for --tokenizer tiktoken only (not {})", options.tokenizer);
  if (options.tokenizer == "byte") return tokenize::make_tokenizer(tokenize::TokenizerKind::byte);
  if (options.tokenizer == "tiktoken") {
    HT_USAGE_CHECK(!options.vocab_dir.empty(), "tiktoken tokenizer needs --vocab FILE (a .tiktoken ranks file)");
    HT_USAGE_CHECK(!options.pattern.empty(), "tiktoken tokenizer needs --pattern ({})",
                   tokenize::builtin_tiktoken_names());
    return tokenize::make_tokenizer(tokenize::TokenizerKind::tiktoken, options.vocab_dir, options.pattern);
  }
  HT_USAGE_CHECK(options.tokenizer == "gpt2", "--tokenizer: unknown tokenizer '{}' (expected gpt2, byte or tiktoken)",
                 options.tokenizer);
  std::string vocab_dir = options.vocab_dir;
  if (vocab_dir.empty()) {
    if (const char* env = std::getenv("HETU_GPT2_VOCAB")) vocab_dir = env;
  }
  HT_USAGE_CHECK(!vocab_dir.empty(), "gpt2 tokenizer needs --vocab DIR (encoder.json, vocab.bpe)");
  return tokenize::make_tokenizer(tokenize::TokenizerKind::gpt2, vocab_dir);
}

std::string read_stdin() {
  std::string text;
  char buffer[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), stdin)) > 0) text.append(buffer, n);
  HT_CHECK(!std::ferror(stdin), "tokenize: error reading stdin");
  return text;
}

// Buffered stdout; the buffer goes out when it is large and at the end.
class Output {
 public:
  std::string& buffer() { return buffer_; }
  void maybe_flush() {
    if (buffer_.size() >= (1u << 20)) flush();
  }
  void flush() {
    if (!buffer_.empty()) std::fwrite(buffer_.data(), 1, buffer_.size(), stdout);
    buffer_.clear();
    std::fflush(stdout);
  }

 private:
  std::string buffer_;
};

// Calls body(line_number, line) for each line; a final "\n" does not start another line and a
// trailing "\r" is dropped.
template <typename Body>
void for_each_line(std::string_view text, Body&& body) {
  int64_t number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    body(++number, line);
    start = end + 1;
  }
}

nlohmann::json parse_json_line(int64_t number, std::string_view line) {
  HT_USAGE_CHECK(!trim(line).empty(), "stdin line {}: expected a JSON value, got an empty line", number);
  try {
    return nlohmann::json::parse(line);
  } catch (const nlohmann::json::parse_error& e) {
    std::string_view what = e.what();  // "[json.exception.parse_error.101] parse error at ..."
    if (const size_t bracket = what.find("] "); bracket != std::string_view::npos) what.remove_prefix(bracket + 2);
    HT_USAGE_ERROR("stdin line {}: not valid JSON: {}", number, what);
  }
}

void check_id(int64_t number, int64_t id, int64_t vocab_size) {
  HT_USAGE_CHECK(id >= 0 && id < vocab_size, "stdin line {}: token id {} is outside [0, {})", number, id, vocab_size);
}

void append_ids(std::string& out, const std::vector<int32_t>& ids, bool json) {
  if (json) out += '[';
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += json ? ',' : ' ';
    fmt::format_to(std::back_inserter(out), "{}", ids[i]);
  }
  if (json) out += ']';
  out += '\n';
}

// --allow-special: the tokenizer's special tokens in the text become their ids.
std::vector<int32_t> encode(const tokenize::Tokenizer& tokenizer, std::string_view text, bool allow_special) {
  return allow_special ? tokenizer.encode_with_special(text) : tokenizer.encode(text);
}

void encode_plain(const tokenize::Tokenizer& tokenizer, std::string_view text, bool allow_special, Output& out) {
  append_ids(out.buffer(), encode(tokenizer, text, allow_special), /*json=*/false);
}

void encode_jsonl(const tokenize::Tokenizer& tokenizer, std::string_view text, bool allow_special, Output& out) {
  for_each_line(text, [&](int64_t number, std::string_view line) {
    const nlohmann::json value = parse_json_line(number, line);
    HT_USAGE_CHECK(value.is_string(), "stdin line {}: expected a JSON string, got {}", number, value.type_name());
    append_ids(out.buffer(), encode(tokenizer, value.get_ref<const std::string&>(), allow_special), /*json=*/true);
    out.maybe_flush();
  });
}

void decode_plain(const tokenize::Tokenizer& tokenizer, std::string_view text, Output& out) {
  std::vector<int32_t> ids;
  for_each_line(text, [&](int64_t number, std::string_view line) {
    size_t pos = 0;
    while (pos < line.size()) {
      const size_t begin = line.find_first_not_of(" \t\v\f", pos);
      if (begin == std::string_view::npos) break;
      size_t end = line.find_first_of(" \t\v\f", begin);
      if (end == std::string_view::npos) end = line.size();
      const std::string_view word = line.substr(begin, end - begin);
      const std::optional<int64_t> id = parse_int64(word);
      HT_USAGE_CHECK(id.has_value(), "stdin line {}: \"{}\" is not a token id", number, word);
      check_id(number, *id, tokenizer.vocab_size());
      ids.push_back(static_cast<int32_t>(*id));
      pos = end;
    }
  });
  out.buffer() += tokenizer.decode(ids);
}

void decode_jsonl(const tokenize::Tokenizer& tokenizer, std::string_view text, Output& out) {
  std::vector<int32_t> ids;
  for_each_line(text, [&](int64_t number, std::string_view line) {
    const nlohmann::json value = parse_json_line(number, line);
    HT_USAGE_CHECK(value.is_array(), "stdin line {}: expected a JSON array of token ids, got {}", number,
                   value.type_name());
    ids.clear();
    for (const nlohmann::json& element : value) {
      HT_USAGE_CHECK(element.is_number_integer(), "stdin line {}: expected a JSON array of token ids, found {}",
                     number, element.dump());
      const int64_t id = element.is_number_unsigned()
                             ? static_cast<int64_t>(std::min<uint64_t>(element.get<uint64_t>(),
                                                                       std::numeric_limits<int64_t>::max()))
                             : element.get<int64_t>();
      check_id(number, id, tokenizer.vocab_size());
      ids.push_back(static_cast<int32_t>(id));
    }
    out.buffer() += nlohmann::json(tokenizer.decode(ids)).dump(-1, ' ', /*ensure_ascii=*/false,
                                                               nlohmann::json::error_handler_t::replace);
    out.buffer() += '\n';
    out.maybe_flush();
  });
}

}  // namespace

int run_tokenize(const TokenizeOptions& options) {
  const std::unique_ptr<tokenize::Tokenizer> tokenizer = open_tokenizer(options);
  const std::string input = read_stdin();
  Output out;
  if (options.decode) {
    options.jsonl ? decode_jsonl(*tokenizer, input, out) : decode_plain(*tokenizer, input, out);
  } else {
    options.jsonl ? encode_jsonl(*tokenizer, input, options.allow_special, out)
                  : encode_plain(*tokenizer, input, options.allow_special, out);
  }
  out.flush();
  HT_CHECK(!std::ferror(stdout), "tokenize: error writing stdout");
  return 0;
}

}  // namespace hetu::app
