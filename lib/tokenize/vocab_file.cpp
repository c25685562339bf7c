// read_vocab_file (vocab_file.h).
#include "lib/tokenize/vocab_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace hetu::tokenize {

std::optional<std::string> read_vocab_file(const std::string& path, std::string& reason) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    reason = std::strerror(errno);
    return std::nullopt;
  }
  std::string text;
  char buffer[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) text.append(buffer, n);
  const bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) {
    reason = "read error";
    return std::nullopt;
  }
  return text;
}

}  // namespace hetu::tokenize
