// A segment tree's nodes at its stride, for the CPU tree kernels: they read and write a tree
// in place whether it is contiguous or strided (a column of a wider table, every other
// element of a buffer), where a contiguous copy written back would cost more than the op
// (2 MB per tree at 2**18 leaves).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace rl_kernels {

template <typename T>
struct Strided {
  T* data;
  int64_t stride;
  T& operator[](int64_t i) const { return data[i * stride]; }
  T* at(int64_t i) const { return data + i * stride; }
};

// Whether a kernel may write `tree` (1-D) in place: elements at a positive stride. Otherwise
// (an expanded view, stride 0) it works on a contiguous copy and copies the result back.
inline bool writable_in_place(const at::Tensor& tree) { return tree.stride(0) >= 1; }

template <typename T>
Strided<T> strided(at::Tensor& tree) {
  return {tree.mutable_data_ptr<T>(), tree.stride(0)};
}

template <typename T>
Strided<const T> strided_const(const at::Tensor& tree) {
  return {tree.const_data_ptr<T>(), tree.stride(0)};
}

}  // namespace rl_kernels
