// The NCCL version hetu was linked against, or why there is none ("not built").
#pragma once

#include <string>

namespace hetu {

std::string nccl_version();

}  // namespace hetu
