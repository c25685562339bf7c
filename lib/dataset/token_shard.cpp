// llm.c token shards: writing (whole shards, atomically), reading (mmap + header checks) and
// prepare_token_shards() (text files -> val/train shards, streamed one shard at a time).
#include "lib/dataset/token_shard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <optional>
#include <regex>
#include <string_view>
#include <utility>

#include "lib/util/atomic_file.h"
#include "lib/util/error.h"

namespace hetu::dataset {

static_assert(std::endian::native == std::endian::little, "token shards are read and written as little-endian");

namespace {

namespace fs = std::filesystem;

constexpr int64_t kMaxShardTokens = std::numeric_limits<int32_t>::max();
constexpr int32_t kMaxNarrowId = std::numeric_limits<uint16_t>::max();  // version 1 holds ids up to this

// The bytes of one shard being built: the header (filled in by write()) and the tokens so far,
// uint16 until an id past 65535 arrives, when the tokens so far are widened to uint32 once.
class ShardBuffer {
 public:
  ShardBuffer() : bytes_(kShardHeaderBytes, '\0') {}
  int64_t size() const { return static_cast<int64_t>((bytes_.size() - kShardHeaderBytes) / width()); }
  bool fits(int32_t id) const { return id >= 0; }
  void push(int32_t id) {  // the caller has checked fits(id)
    if (!wide_ && id > kMaxNarrowId) widen();
    if (wide_) {
      append(static_cast<uint32_t>(id));
    } else {
      append(static_cast<uint16_t>(id));
    }
  }
  // Writes the shard to path and empties the buffer; separator >= 0 is recorded in the header.
  void write(const std::string& path, int32_t separator) {
    HT_USAGE_CHECK(size() <= kMaxShardTokens, "{}: {} tokens do not fit one shard (at most {})", path, size(),
                   kMaxShardTokens);
    const std::array<int32_t, 5> head = {kShardMagic, wide_ ? kShardVersionWide : kShardVersion,
                                         static_cast<int32_t>(size()), separator >= 0 ? kShardDocumentsMagic : 0,
                                         separator >= 0 ? separator : 0};
    std::memcpy(bytes_.data(), head.data(), sizeof(head));
    write_file_atomic(path, bytes_);
    bytes_.assign(kShardHeaderBytes, '\0');
    wide_ = false;
  }

 private:
  size_t width() const { return wide_ ? sizeof(uint32_t) : sizeof(uint16_t); }
  template <typename T> void append(T v) {  // little-endian, as the host (static_assert above)
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &v, sizeof(T));
  }
  void widen() {
    std::string narrow = std::move(bytes_);
    bytes_.assign(kShardHeaderBytes, '\0');
    wide_ = true;
    for (size_t at = kShardHeaderBytes; at < narrow.size(); at += sizeof(uint16_t)) {
      uint16_t v = 0;
      std::memcpy(&v, narrow.data() + at, sizeof(v));
      append(static_cast<uint32_t>(v));
    }
  }

  std::string bytes_;
  bool wide_ = false;
};

// Reads a whole input; "-" is stdin.
std::string read_input(const std::string& input) {
  if (input == "-") {
    std::string text{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    HT_USAGE_CHECK(!std::cin.bad(), "data prepare: cannot read stdin");
    return text;
  }
  std::ifstream in(input, std::ios::binary);
  HT_USAGE_CHECK(in.good(), "data prepare: cannot read {}: {}", input, std::strerror(errno));
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  HT_USAGE_CHECK(!in.bad(), "data prepare: cannot read {}: {}", input, std::strerror(errno));
  return text;
}

// The documents of one input: the whole text, or with start_line, pieces that each begin at a
// line it matches (the text before the first such line is a document of its own if not empty).
std::vector<std::string_view> split_documents(const std::string& text, const std::optional<std::regex>& start_line) {
  if (!start_line) return {text};
  std::vector<std::string_view> documents;
  const std::string_view all(text);
  size_t begin = 0;  // of the current document
  for (size_t line = 0; line < all.size();) {
    const size_t end = std::min(all.find('\n', line), all.size());
    if (line > begin && std::regex_search(text.begin() + static_cast<std::ptrdiff_t>(line),
                                          text.begin() + static_cast<std::ptrdiff_t>(end), *start_line)) {
      documents.push_back(all.substr(begin, line - begin));
      begin = line;
    }
    line = end + 1;
  }
  if (begin < all.size()) documents.push_back(all.substr(begin));
  return documents;
}

// Routes a token stream: the first val_tokens to val_000000.bin, the rest to train shards.
class SplitWriter {
 public:
  SplitWriter(fs::path out_dir, int64_t val_tokens, int64_t shard_tokens, int32_t separator)
      : out_dir_(std::move(out_dir)), val_target_(val_tokens), shard_tokens_(shard_tokens) {
    summary_.separator = separator;
  }

  void push(int32_t id, const std::string& input) {
    HT_USAGE_CHECK(buffer_.fits(id),
                   "data prepare: {}: the tokenizer produced id {}, not a token id (ids are >= 0)", input, id);
    buffer_.push(id);
    if (summary_.val_tokens < val_target_) {
      if (++summary_.val_tokens == val_target_) write("val_000000.bin");
    } else {
      ++summary_.train_tokens;
      if (buffer_.size() == shard_tokens_) write(train_name());
    }
    ++summary_.tokens;
  }

  void add_document() { ++summary_.documents; }
  int64_t documents() const { return summary_.documents; }

  PrepareSummary finish() {
    HT_USAGE_CHECK(summary_.train_tokens > 0,
                   "data prepare: the inputs hold {} tokens and --val-tokens takes {}: none are left for training",
                   summary_.tokens, val_target_);
    if (buffer_.size() > 0) write(train_name());
    return summary_;
  }

  // Best effort, on failure: leave no shard of this run behind.
  void remove_written() noexcept {
    for (const std::string& file : summary_.files) {
      std::error_code ignored;
      fs::remove(file, ignored);
    }
  }

 private:
  std::string train_name() const {
    const int64_t shards = static_cast<int64_t>(summary_.files.size()) - (val_target_ > 0 ? 1 : 0);
    return fmt::format("train_{:06d}.bin", shards);
  }
  void write(const std::string& name) {
    const std::string path = (out_dir_ / name).string();
    buffer_.write(path, summary_.separator);
    summary_.files.push_back(path);
  }

  fs::path out_dir_;
  int64_t val_target_;
  int64_t shard_tokens_;
  ShardBuffer buffer_;
  PrepareSummary summary_;
};

}  // namespace

void write_token_shard(const std::string& path, const std::vector<int32_t>& tokens, int32_t separator) {
  ShardBuffer buffer;
  for (size_t i = 0; i < tokens.size(); ++i) {
    HT_USAGE_CHECK(buffer.fits(tokens[i]),
                   "{}: token id {} at position {} is not a token id (ids are >= 0)", path, tokens[i], i);
    buffer.push(tokens[i]);
  }
  buffer.write(path, separator);
}

// ---- TokenShard ----

TokenShard::TokenShard(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  HT_USAGE_CHECK(fd >= 0, "cannot open {}: {}", path, std::strerror(errno));
  // The fd is closed on every path out of this block; the mapping outlives it.
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};

  struct stat st {};
  HT_USAGE_CHECK(::fstat(fd, &st) == 0, "cannot stat {}: {}", path, std::strerror(errno));
  HT_USAGE_CHECK(S_ISREG(st.st_mode), "{}: not a regular file", path);
  const auto file_bytes = static_cast<int64_t>(st.st_size);
  HT_USAGE_CHECK(file_bytes >= static_cast<int64_t>(kShardHeaderBytes),
                 "{}: {} bytes, shorter than the 1024-byte header: not an llm.c token shard", path, file_bytes);

  std::array<int32_t, 5> head{};
  HT_USAGE_CHECK(::pread(fd, head.data(), sizeof(head), 0) == static_cast<ssize_t>(sizeof(head)),
                 "cannot read the header of {}: {}", path, std::strerror(errno));
  HT_USAGE_CHECK(head[0] == kShardMagic, "{}: bad magic {} (expected {}): not an llm.c token shard", path, head[0],
                 kShardMagic);
  HT_USAGE_CHECK(head[1] == kShardVersion || head[1] == kShardVersionWide,
                 "{}: unsupported version {} (expected {}: uint16 tokens, or {}: uint32 tokens)", path, head[1],
                 kShardVersion, kShardVersionWide);
  const bool wide = head[1] == kShardVersionWide;
  const int64_t width = wide ? 4 : 2;
  const int64_t count = head[2];
  HT_USAGE_CHECK(count >= 0, "{}: header says {} tokens: not an llm.c token shard", path, count);
  const int64_t expected = static_cast<int64_t>(kShardHeaderBytes) + width * count;
  if (file_bytes != expected) {
    const int64_t held = (file_bytes - static_cast<int64_t>(kShardHeaderBytes)) / width;
    const bool stray = (file_bytes - static_cast<int64_t>(kShardHeaderBytes)) % width != 0;
    HT_USAGE_ERROR("{}: header says {} tokens but the file holds {}{} ({} bytes; a {}-token version-{} shard is {} "
                   "bytes)",
                   path, count, held, stray ? " and stray bytes" : "", file_bytes, count, head[1], expected);
  }

  void* map = ::mmap(nullptr, static_cast<size_t>(file_bytes), PROT_READ, MAP_PRIVATE, fd, 0);
  HT_CHECK(map != MAP_FAILED, "cannot map {}: {}", path, std::strerror(errno));
  map_ = map;
  map_bytes_ = static_cast<size_t>(file_bytes);
  tokens_ = static_cast<const char*>(map) + kShardHeaderBytes;
  wide_ = wide;
  size_ = count;
  if (head[3] == kShardDocumentsMagic) {
    HT_USAGE_CHECK(head[4] >= 0 && (wide || head[4] <= kMaxNarrowId),
                   "{}: the header's document separator {} is not a token id", path, head[4]);
    separator_ = head[4];
  }
}

TokenShard::~TokenShard() { unmap(); }

TokenShard::TokenShard(TokenShard&& other) noexcept
    : path_(std::move(other.path_)),
      map_(std::exchange(other.map_, nullptr)),
      map_bytes_(std::exchange(other.map_bytes_, 0)),
      tokens_(std::exchange(other.tokens_, nullptr)),
      wide_(other.wide_),
      size_(std::exchange(other.size_, 0)),
      separator_(std::exchange(other.separator_, -1)) {}

TokenShard& TokenShard::operator=(TokenShard&& other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    map_ = std::exchange(other.map_, nullptr);
    map_bytes_ = std::exchange(other.map_bytes_, 0);
    tokens_ = std::exchange(other.tokens_, nullptr);
    wide_ = other.wide_;
    size_ = std::exchange(other.size_, 0);
    separator_ = std::exchange(other.separator_, -1);
  }
  return *this;
}

void TokenShard::unmap() noexcept {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
  map_ = nullptr;
  map_bytes_ = 0;
  tokens_ = nullptr;
  size_ = 0;
}

int32_t TokenShard::token(int64_t i) const {
  HT_CHECK(i >= 0 && i < size_, "{}: token index {} is outside [0, {})", path_, i, size_);
  return (*this)[i];
}

void TokenShard::copy(int64_t start, int64_t count, int32_t* out) const {
  if (wide_) {
    const uint32_t* from = static_cast<const uint32_t*>(tokens_) + start;
    std::transform(from, from + count, out, [](uint32_t t) { return static_cast<int32_t>(t); });
  } else {
    const uint16_t* from = static_cast<const uint16_t*>(tokens_) + start;
    std::copy(from, from + count, out);
  }
}

// ---- prepare_token_shards ----

PrepareSummary prepare_token_shards(const tokenize::Tokenizer& tokenizer, const std::vector<std::string>& inputs,
                                    const std::string& out_dir, int64_t val_tokens, int64_t shard_tokens,
                                    const std::string& document_start) {
  HT_USAGE_CHECK(!inputs.empty(), "data prepare: no input files");
  HT_USAGE_CHECK(!out_dir.empty(), "data prepare: no output folder");
  HT_USAGE_CHECK(val_tokens >= 0, "data prepare: --val-tokens must be >= 0, got {}", val_tokens);
  HT_USAGE_CHECK(shard_tokens >= 1 && shard_tokens <= kMaxShardTokens,
                 "data prepare: --shard-tokens must be in [1, {}], got {}", kMaxShardTokens, shard_tokens);
  HT_USAGE_CHECK(std::count(inputs.begin(), inputs.end(), "-") <= 1, "data prepare: stdin ('-') given twice");
  // Fail before writing anything: every input must be readable...
  for (const std::string& input : inputs) {
    if (input == "-") continue;
    std::error_code ec;
    HT_USAGE_CHECK(fs::is_regular_file(input, ec), "data prepare: {}: no such file", input);
    HT_USAGE_CHECK(std::ifstream(input, std::ios::binary).good(), "data prepare: cannot read {}: {}", input,
                   std::strerror(errno));
  }
  // ...and out_dir must hold no shard this run could overwrite or be mixed up with.
  const fs::path out(out_dir);
  std::error_code ec;
  const bool created = !fs::exists(out, ec);
  fs::create_directories(out, ec);
  HT_USAGE_CHECK(!ec && fs::is_directory(out), "data prepare: cannot create the folder {}: {}", out_dir,
                 ec ? ec.message() : "a file of that name exists");
  std::vector<std::string> existing;
  for (const fs::directory_entry& entry : fs::directory_iterator(out)) {
    if (entry.path().extension() == ".bin") existing.push_back(entry.path().filename().string());
  }
  if (!existing.empty()) {
    std::sort(existing.begin(), existing.end());
    HT_USAGE_ERROR("data prepare: {} already holds {} .bin file{} ({}{}); refusing to overwrite: choose an empty "
                   "folder or remove them",
                   out_dir, existing.size(), existing.size() == 1 ? "" : "s", existing.front(),
                   existing.size() > 1 ? ", ..." : "");
  }

  std::optional<std::regex> start_line;
  try {
    if (!document_start.empty()) start_line.emplace(document_start, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    HT_USAGE_ERROR("data prepare: --document-start '{}' is not a regular expression: {}", document_start, e.what());
  }
  const int32_t eot = tokenizer.eot_id();
  SplitWriter writer(out, val_tokens, shard_tokens, eot);
  try {
    for (const std::string& input : inputs) {
      const std::string whole = read_input(input);  // the documents are views into it
      for (const std::string_view text : split_documents(whole, start_line)) {
        const std::vector<int32_t> ids = tokenizer.encode(text);
        writer.add_document();
        if (eot >= 0) {
          const auto at = std::find(ids.begin(), ids.end(), eot);
          HT_USAGE_CHECK(at == ids.end(),
                         "data prepare: {}: document {} encodes to the document separator id {} (token {}); the "
                         "byte tokenizer's separator is the NUL byte, which text must not hold",
                         input, writer.documents(), eot, at - ids.begin());
          writer.push(eot, input);
        }
        for (int32_t id : ids) writer.push(id, input);
      }
    }
    return writer.finish();
  } catch (...) {
    writer.remove_written();
    if (created) fs::remove(out, ec);  // only if it is still empty
    throw;
  }
}

}  // namespace hetu::dataset
