// llm.c GPT-2 checkpoint files: header validation (sizes computed with overflow checks and
// compared with the file's length before anything is allocated), the stacked-by-layer
// parameter order, and writing. See the layout in llmc_checkpoint.h.
#include "lib/checkpoint/llmc_checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <functional>

#include "lib/util/atomic_file.h"
#include "lib/util/error.h"

namespace hetu::checkpoint {

static_assert(std::endian::native == std::endian::little, "llm.c files are little-endian, as stored in memory");

namespace {

constexpr size_t kHeaderInts = 256;
constexpr size_t kHeaderBytes = kHeaderInts * sizeof(int32_t);

// One block of the file: a per-layer tensor stacked over L layers, or a single tensor.
struct Block {
  const char* name;  // hetu name; "h.{}." is prefixed for per-layer blocks
  bool per_layer;
};
constexpr std::array<Block, 16> kBlocks = {{
    {"wte.weight", false},
    {"wpe.weight", false},
    {"ln_1.weight", true},
    {"ln_1.bias", true},
    {"attn.c_attn.weight", true},
    {"attn.c_attn.bias", true},
    {"attn.c_proj.weight", true},
    {"attn.c_proj.bias", true},
    {"ln_2.weight", true},
    {"ln_2.bias", true},
    {"mlp.c_fc.weight", true},
    {"mlp.c_fc.bias", true},
    {"mlp.c_proj.weight", true},
    {"mlp.c_proj.bias", true},
    {"ln_f.weight", false},
    {"ln_f.bias", false},
}};

Shape block_shape(size_t block, const LlmcHeader& h) {
  const int64_t C = h.channels;
  switch (block) {
    case 0:
      return {h.padded_vocab, C};
    case 1:
      return {h.max_seq_len, C};
    case 4:
      return {3 * C, C};
    case 5:
      return {3 * C};
    case 6:
      return {C, C};
    case 10:
      return {4 * C, C};
    case 11:
      return {4 * C};
    case 12:
      return {C, 4 * C};
    default:
      return {C};  // norms and the C-sized biases
  }
}

DType version_dtype(int32_t version) { return version == kLlmcVersionBf16 ? DType::bf16 : DType::f32; }

// Validates the header; returns the parameter count (every product overflow-checked).
uint64_t check_header(const LlmcHeader& h, const std::string& file) {
  auto positive = [&](int64_t v, const char* what) {
    HT_USAGE_CHECK(v >= 1, "{}: llm.c header: {} = {} must be >= 1", file, what, v);
  };
  positive(h.max_seq_len, "max_seq_len (maxT)");
  positive(h.vocab, "vocab_size (V)");
  positive(h.layers, "num_layers (L)");
  positive(h.heads, "num_heads (NH)");
  positive(h.channels, "channels (C)");
  HT_USAGE_CHECK(h.padded_vocab >= h.vocab,
                 "{}: llm.c header: padded_vocab_size (Vp) = {} is smaller than vocab_size = {}", file, h.padded_vocab,
                 h.vocab);
  HT_USAGE_CHECK(h.channels % h.heads == 0, "{}: llm.c header: channels = {} is not a multiple of num_heads = {}", file,
                 h.channels, h.heads);
  uint64_t total = 0;
  bool overflow = false;
  for (size_t b = 0; b < kBlocks.size() && !overflow; ++b) {  // per block, not per tensor: L may be huge here
    uint64_t n = kBlocks[b].per_layer ? static_cast<uint64_t>(h.layers) : 1;
    for (int64_t d : block_shape(b, h)) overflow |= __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n);
    overflow |= __builtin_add_overflow(total, n, &total);
  }
  HT_USAGE_CHECK(!overflow && total <= (uint64_t{1} << 50),
                 "{}: llm.c header: the sizes (maxT {}, V {}, L {}, C {}) "
                 "describe an impossibly large model",
                 file, h.max_seq_len, h.padded_vocab, h.layers, h.channels);
  return total;
}

// Reads a file through `read(offset, dst, nbytes)` after checking `size` against the header.
LlmcCheckpoint parse(uint64_t size, const std::function<void(uint64_t, void*, uint64_t)>& read,
                     const std::string& file) {
  HT_USAGE_CHECK(size >= kHeaderBytes, "{}: {} bytes, too short for an llm.c checkpoint (a 1024-byte header first)",
                 file, size);
  std::array<int32_t, kHeaderInts> raw{};
  read(0, raw.data(), kHeaderBytes);
  HT_USAGE_CHECK(raw[0] == kLlmcMagic, "{}: not an llm.c model file (magic {}, expected {})", file, raw[0], kLlmcMagic);
  HT_USAGE_CHECK(raw[1] == kLlmcVersionF32 || raw[1] == kLlmcVersionBf16,
                 "{}: llm.c model file version {} is not supported (3: float32, 5: bfloat16; version 1 files predate "
                 "the padded vocab: re-export them with llm.c's train_gpt2.py)",
                 file, raw[1]);
  LlmcCheckpoint out;
  LlmcHeader& h = out.header;
  h = {raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7]};
  const uint64_t count = check_header(h, file);
  const DType dtype = version_dtype(h.version);
  const uint64_t expected = kHeaderBytes + count * dtype_size(dtype);
  HT_USAGE_CHECK(size == expected,
                 "{}: {} bytes, but its header (maxT {}, V {}, Vp {}, L {}, NH {}, C {}, {}) needs "
                 "exactly {}{}",
                 file, size, h.max_seq_len, h.vocab, h.padded_vocab, h.layers, h.heads, h.channels, to_string(dtype),
                 expected, size < expected ? " (truncated?)" : "");
  uint64_t offset = kHeaderBytes;
  for (const auto& [name, shape] : llmc_parameters(h)) {
    Tensor t = empty(shape, dtype);
    const uint64_t nbytes = static_cast<uint64_t>(t.numel()) * dtype_size(dtype);
    read(offset, t.raw_data(), nbytes);
    offset += nbytes;
    out.tensors[name] = t;
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, Shape>> llmc_parameters(const LlmcHeader& header) {
  std::vector<std::pair<std::string, Shape>> out;
  for (size_t b = 0; b < kBlocks.size(); ++b) {
    const Shape shape = block_shape(b, header);
    if (!kBlocks[b].per_layer) {
      out.emplace_back(kBlocks[b].name, shape);
      continue;
    }
    for (int64_t l = 0; l < header.layers; ++l) out.emplace_back(fmt::format("h.{}.{}", l, kBlocks[b].name), shape);
  }
  return out;
}

LlmcCheckpoint parse_llmc_checkpoint(std::string_view bytes, const std::string& file) {
  return parse(
      bytes.size(), [&](uint64_t offset, void* dst, uint64_t n) { std::memcpy(dst, bytes.data() + offset, n); }, file);
}

LlmcCheckpoint read_llmc_checkpoint(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) HT_USAGE_ERROR("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    HT_USAGE_ERROR("{}: not a regular file", path);
  }
  auto read = [&](uint64_t offset, void* out, uint64_t nbytes) {
    auto* dst = static_cast<char*>(out);
    while (nbytes > 0) {
      const ssize_t n = ::pread(fd, dst, std::min<uint64_t>(nbytes, uint64_t{1} << 30), static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) HT_USAGE_ERROR("{}: cannot read at byte {} (file changed or unreadable)", path, offset);
      dst += n;
      offset += static_cast<uint64_t>(n);
      nbytes -= static_cast<uint64_t>(n);
    }
  };
  try {
    LlmcCheckpoint out = parse(static_cast<uint64_t>(st.st_size), read, path);
    ::close(fd);
    return out;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

void write_llmc_checkpoint(const std::string& path, const LlmcHeader& header,
                           const std::map<std::string, Tensor>& tensors, DType dtype) {
  HT_USAGE_CHECK(dtype == DType::f32 || dtype == DType::bf16, "llm.c files hold f32 or bf16, not {}", to_string(dtype));
  LlmcHeader h = header;
  h.version = dtype == DType::bf16 ? kLlmcVersionBf16 : kLlmcVersionF32;
  const uint64_t count = check_header(h, path);
  for (int64_t v : {h.max_seq_len, h.vocab, h.layers, h.heads, h.channels, h.padded_vocab}) {
    HT_USAGE_CHECK(v <= INT32_MAX, "{}: llm.c stores sizes as int32; {} does not fit", path, v);
  }
  std::array<int32_t, kHeaderInts> raw{};
  raw[0] = kLlmcMagic;
  raw[1] = h.version;
  raw[2] = static_cast<int32_t>(h.max_seq_len);
  raw[3] = static_cast<int32_t>(h.vocab);
  raw[4] = static_cast<int32_t>(h.layers);
  raw[5] = static_cast<int32_t>(h.heads);
  raw[6] = static_cast<int32_t>(h.channels);
  raw[7] = static_cast<int32_t>(h.padded_vocab);
  std::string bytes;
  bytes.reserve(kHeaderBytes + count * dtype_size(dtype));
  bytes.append(reinterpret_cast<const char*>(raw.data()), kHeaderBytes);
  for (const auto& [name, shape] : llmc_parameters(h)) {
    auto it = tensors.find(name);
    HT_CHECK(it != tensors.end(), "llm.c export: tensor {} is missing", name);
    HT_CHECK(it->second.shape() == shape, "llm.c export: tensor {} has shape {}, the header needs {}", name,
             shape_str(it->second.shape()), shape_str(shape));
    const Tensor t = (it->second.dtype() == dtype ? it->second : it->second.to(dtype)).contiguous();
    if (t.numel() > 0)
      bytes.append(static_cast<const char*>(t.raw_data()), static_cast<size_t>(t.numel()) * dtype_size(dtype));
  }
  write_file_atomic(path, bytes);
}

}  // namespace hetu::checkpoint
