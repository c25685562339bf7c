// Writing files so that a crash or error never leaves a half-written file in place:
// write to "<path>.tmp.<pid>", fsync, rename over <path>, fsync the directory.
#pragma once

#include <string>
#include <string_view>

namespace hetu {

void write_file_atomic(const std::string& path, std::string_view content);

}  // namespace hetu
