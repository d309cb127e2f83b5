// Argument checks shared by the CPU and CUDA kernels.
//
// A kernel registered for a backend key replaces rl_core's reference kernel together with
// its Python-side layout checks, so each kernel checks the layout itself, with the same
// messages as rl_core.ops._library (shapes printed as Python tuples, dtypes as torch.<name>).
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace rl_kernels {

inline std::string py_shape(at::IntArrayRef sizes) {
  std::ostringstream out;
  out << "(";
  for (size_t i = 0; i < sizes.size(); ++i) {
    out << sizes[i];
    if (i + 1 < sizes.size() || sizes.size() == 1) {
      out << (sizes.size() == 1 ? "," : ", ");
    }
  }
  out << ")";
  return out.str();
}

inline std::string py_dtype(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return "torch.float32";
    case at::kDouble: return "torch.float64";
    case at::kHalf: return "torch.float16";
    case at::kBFloat16: return "torch.bfloat16";
    case at::kBool: return "torch.bool";
    case at::kLong: return "torch.int64";
    case at::kInt: return "torch.int32";
    case at::kShort: return "torch.int16";
    case at::kChar: return "torch.int8";
    case at::kByte: return "torch.uint8";
    default: return std::string("torch.") + c10::toString(type);
  }
}

using NamedTensors = std::vector<std::pair<const char*, const at::Tensor*>>;

// The [T, N] layout of a value op: floats share the first float's shape, device and
// floating dtype; masks share its shape and device and are bool.
inline void check_value_layout(const char* op, const NamedTensors& floats,
                               const NamedTensors& masks) {
  const char* first_name = floats.front().first;
  const at::Tensor& first = *floats.front().second;
  TORCH_CHECK(first.dim() == 2, "rl_core::", op, ": expected ", first_name,
              " in the [T, N] layout (2-D), got shape ", py_shape(first.sizes()), ".");
  auto check_shape_device = [&](const char* name, const at::Tensor& t) {
    TORCH_CHECK(t.sizes() == first.sizes(), "rl_core::", op, ": expected ", name, " of shape ",
                py_shape(first.sizes()), " like ", first_name, ", got ", py_shape(t.sizes()),
                ".");
    TORCH_CHECK(t.device() == first.device(), "rl_core::", op, ": expected ", name, " on ",
                first.device().str(), ", got ", t.device().str(), ".");
  };
  for (const auto& named : floats) check_shape_device(named.first, *named.second);
  for (const auto& named : masks) check_shape_device(named.first, *named.second);
  for (const auto& named : floats) {
    const at::Tensor& t = *named.second;
    TORCH_CHECK(t.scalar_type() == first.scalar_type() && t.is_floating_point(), "rl_core::",
                op, ": expected ", named.first, " of dtype ", py_dtype(first.scalar_type()),
                ", got ", py_dtype(t.scalar_type()), ".");
  }
  for (const auto& named : masks) {
    const at::Tensor& t = *named.second;
    TORCH_CHECK(t.scalar_type() == at::kBool, "rl_core::", op, ": expected ", named.first,
                " of dtype torch.bool, got ", py_dtype(t.scalar_type()), ".");
  }
}

// A tree is 1-D of size 2 * capacity (a power of two); value is 1-D in the tree's dtype on
// its device; index (when given) is int64 shaped like value on the tree's device.
inline int64_t check_tree_layout(const char* op, const at::Tensor& tree,
                                 const at::Tensor* index, const at::Tensor& value) {
  const int64_t size = tree.dim() == 1 ? tree.size(0) : 0;
  TORCH_CHECK(tree.dim() == 1 && size >= 2 && (size & (size - 1)) == 0, "rl_core::", op,
              ": expected a 1-D tree of size 2 * capacity (a power of two), got shape ",
              py_shape(tree.sizes()), ".");
  TORCH_CHECK(value.dim() == 1 && value.scalar_type() == tree.scalar_type() &&
                  value.device() == tree.device(),
              "rl_core::", op, ": expected value 1-D ", py_dtype(tree.scalar_type()), " on ",
              tree.device().str(), ", got shape ", py_shape(value.sizes()), " ",
              py_dtype(value.scalar_type()), " on ", value.device().str(), ".");
  if (index != nullptr) {
    TORCH_CHECK(index->sizes() == value.sizes() && index->scalar_type() == at::kLong &&
                    index->device() == tree.device(),
                "rl_core::", op, ": expected index int64 of shape ", py_shape(value.sizes()),
                " on ", tree.device().str(), ", got ", py_dtype(index->scalar_type()),
                " of shape ", py_shape(index->sizes()), " on ", index->device().str(), ".");
  }
  TORCH_CHECK(tree.is_floating_point(), "rl_core::", op,
              ": expected a floating-point tree, got ", py_dtype(tree.scalar_type()), ".");
  return size / 2;
}

// The min tree of a fused op: shaped, typed and placed like the sum tree.
inline void check_tree_pair(const char* op, const at::Tensor& sum_tree,
                            const at::Tensor& min_tree) {
  TORCH_CHECK(min_tree.sizes() == sum_tree.sizes() &&
                  min_tree.scalar_type() == sum_tree.scalar_type() &&
                  min_tree.device() == sum_tree.device(),
              "rl_core::", op, ": expected min_tree like sum_tree (", py_shape(sum_tree.sizes()),
              " ", py_dtype(sum_tree.scalar_type()), " on ", sum_tree.device().str(), "), got ",
              py_shape(min_tree.sizes()), " ", py_dtype(min_tree.scalar_type()), " on ",
              min_tree.device().str(), ".");
}

// The running maximum and the index bound of sum_min_tree_priority_update_.
inline void check_priority_bounds(const char* op, const at::Tensor& sum_tree,
                                  const at::Tensor& max_value, int64_t max_index,
                                  int64_t capacity) {
  TORCH_CHECK(max_value.numel() == 1 && max_value.scalar_type() == sum_tree.scalar_type() &&
                  max_value.device() == sum_tree.device(),
              "rl_core::", op, ": expected max_value of one element, ",
              py_dtype(sum_tree.scalar_type()), " on ", sum_tree.device().str(),
              " like sum_tree, got shape ", py_shape(max_value.sizes()), " ",
              py_dtype(max_value.scalar_type()), " on ", max_value.device().str(), ".");
  TORCH_CHECK(max_index >= 0 && max_index <= capacity, "rl_core::", op,
              ": expected max_index in [0, ", capacity, "] (the capacity), got ", max_index,
              ".");
}

// The checks of sum_min_tree_priority_update_'s data, from the range of its indices and its
// smallest priority (NaN when one is NaN): an IndexError, then a ValueError in Python.
inline void check_priority_data(const char* op, int64_t low, int64_t high, double smallest,
                                int64_t max_index) {
  TORCH_CHECK_INDEX(low >= 0 && high < max_index, "rl_core::", op, ": expected indices in [0, ",
                    max_index, "), got values in [", low, ", ", high, "].");
  TORCH_CHECK_VALUE(smallest >= 0, "rl_core::", op, ": expected priorities >= 0, got a minimum of ",
                    smallest, ".");
}

// The checks of sum_tree_sample and its outputs, shaped like `uniform`: int64 leaves and
// weights in the trees' dtype. Returns the capacity.
inline int64_t sample_outputs(const char* op, const at::Tensor& sum_tree,
                              const at::Tensor& min_tree, const at::Tensor& uniform,
                              at::Tensor& leaf, at::Tensor& weight) {
  const int64_t capacity = check_tree_layout(op, sum_tree, nullptr, uniform);
  check_tree_pair(op, sum_tree, min_tree);
  leaf = at::empty(uniform.sizes(), uniform.options().dtype(at::kLong));
  weight = at::empty(uniform.sizes(), uniform.options());
  return capacity;
}

// Leaf indices in [0, capacity), with rl_core's message (a ValueError in Python).
inline void check_leaf_range(const char* op, int64_t low, int64_t high, int64_t capacity) {
  TORCH_CHECK_VALUE(low >= 0 && high < capacity, op, ": expected leaf indices in [0, ",
                    capacity, "), got values in [", low, ", ", high,
                    "]. Drop out-of-range indices or build a tree with a larger capacity.");
}

// The leaf indices of a CPU tree update, contiguous, checked to lie in [0, capacity) (the
// range from one pass over them); `index` must not be empty.
inline at::Tensor checked_cpu_leaves(const char* op, const at::Tensor& index, int64_t capacity) {
  at::Tensor idx = index.contiguous();
  const int64_t* pi = idx.const_data_ptr<int64_t>();
  const auto [low, high] = std::minmax_element(pi, pi + idx.numel());
  check_leaf_range(op, *low, *high, capacity);
  return idx;
}

// torch.minimum: NaN wins.
template <typename T>
C10_HOST_DEVICE inline T nan_min(T a, T b) {
  if (a != a) return a;
  if (b != b) return b;
  return b < a ? b : a;
}

// torch.maximum: NaN wins.
template <typename T>
C10_HOST_DEVICE inline T nan_max(T a, T b) {
  if (a != a) return a;
  if (b != b) return b;
  return b > a ? b : a;
}

}  // namespace rl_kernels
