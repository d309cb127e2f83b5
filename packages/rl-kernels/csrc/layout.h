// The [T, N] layout of the value-op kernels: any strides, read in place.
//
// rl_core's wrappers pass [T, N] views of the caller's tensors (time first, possibly with
// time as the fast axis when the caller's time dimension is last). The kernels read every
// input with the strides of reward (copying an input only when its strides differ) and
// write outputs shaped and strided like torch.empty_like(reward), as the ops' fake kernels
// describe them.
#pragma once

#include <ATen/ATen.h>

namespace rl_kernels {

// reward itself when non-overlapping and dense (its strides then serve the outputs),
// else a contiguous copy.
inline at::Tensor dense_layout(const at::Tensor& reward) {
  return reward.is_non_overlapping_and_dense() ? reward : reward.contiguous();
}

// x when it has like's strides, else a copy of x with like's strides (and x's dtype).
inline at::Tensor strided_like(const at::Tensor& x, const at::Tensor& like) {
  if (x.strides() == like.strides()) return x;
  auto out = at::empty_like(like, like.options().dtype(x.scalar_type()));
  out.copy_(x);
  return out;
}

}  // namespace rl_kernels
