// Trace arguments of communication (comm_trace.h).
#include "lib/hspmd/comm_trace.h"

#include <fmt/format.h>

namespace hetu {

int64_t tensor_bytes(const Tensor& t) { return t.numel() * static_cast<int64_t>(dtype_size(t.dtype())); }

std::string p2p_trace_args(std::span<const P2POp> ops) {
  std::string sends, recvs;
  for (const P2POp& op : ops) {
    std::string& list = op.kind == P2PKind::send ? sends : recvs;
    list += fmt::format("{}[{},{}]", list.empty() ? "" : ",", op.peer, tensor_bytes(op.tensor));
  }
  return fmt::format("\"sends\":[{}],\"recvs\":[{}]", sends, recvs);
}

}  // namespace hetu
