// Overloaded: a visitor from lambdas, for std::visit over a variant.
//
//   std::visit(Overloaded{[](const CopyOp& o) { ... }, [](const SendRecvOp& o) { ... }}, op);
#pragma once

namespace hetu {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace hetu
