// CUDA kernels of rl_core's segment-tree ops: the sum and min tree updates, alone and fused,
// the prefix-sum search, and the prioritized-replay ops built on them (sum_tree_sample,
// sum_min_tree_priority_update_). Same checks and formulas as the CPU kernels.
//
// Host syncs: an update needs its leaf range on the host to raise before anything is
// written, so each update reads the range (and for the priority update the smallest
// priority) back in one copy of three numbers. The searches and sample never wait on the
// device.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <cstring>
#include <limits>
#include <tuple>

#include "../checks.h"

namespace rl_kernels {
namespace {

constexpr int kThreads = 256;
// The updates and the range reduction run in one block of this many threads.
constexpr int kBlockThreads = 1024;
// Up to this many writes, the update kernel finds repeated leaves by comparing pairs.
constexpr int64_t kPairwiseDedupMax = 4096;

int64_t blocks_for(int64_t n) { return (n + kThreads - 1) / kThreads; }

// ------------------------------------------------------------------------- range read-back

// out[0], out[1]: the smallest and largest index; out[2]: the bits of the smallest priority
// as a double (NaN when one is NaN; +inf without priorities). One block.
template <typename scalar_t>
__global__ void bounds_kernel(const int64_t* __restrict__ index,
                              const scalar_t* __restrict__ priority, int64_t count,
                              int64_t* __restrict__ out) {
  __shared__ int64_t lows[kBlockThreads];
  __shared__ int64_t highs[kBlockThreads];
  __shared__ double smallest[kBlockThreads];
  int64_t low = std::numeric_limits<int64_t>::max();
  int64_t high = std::numeric_limits<int64_t>::min();
  double least = std::numeric_limits<double>::infinity();
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    const int64_t i = index[k];
    low = i < low ? i : low;
    high = i > high ? i : high;
    if (priority != nullptr) least = nan_min(least, static_cast<double>(priority[k]));
  }
  lows[threadIdx.x] = low;
  highs[threadIdx.x] = high;
  smallest[threadIdx.x] = least;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      const int64_t other_low = lows[threadIdx.x + half];
      const int64_t other_high = highs[threadIdx.x + half];
      if (other_low < lows[threadIdx.x]) lows[threadIdx.x] = other_low;
      if (other_high > highs[threadIdx.x]) highs[threadIdx.x] = other_high;
      smallest[threadIdx.x] = nan_min(smallest[threadIdx.x], smallest[threadIdx.x + half]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    out[0] = lows[0];
    out[1] = highs[0];
    out[2] = __double_as_longlong(smallest[0]);
  }
}

struct Bounds {
  int64_t low;
  int64_t high;
  double smallest;  // of the priorities; +inf when none were given
};

// The range of `index` (contiguous, not empty) and the smallest of `priority` (contiguous,
// same length, or undefined), read back to the host: one device sync.
Bounds read_bounds(const at::Tensor& index, const at::Tensor& priority) {
  auto out = at::empty({3}, index.options());
  auto stream = c10::cuda::getCurrentCUDAStream();
  const int64_t count = index.numel();
  if (priority.defined()) {
    const auto type = priority.scalar_type();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, type, "bounds", [&] {
      bounds_kernel<scalar_t><<<1, kBlockThreads, 0, stream>>>(
          index.const_data_ptr<int64_t>(), priority.const_data_ptr<scalar_t>(), count,
          out.mutable_data_ptr<int64_t>());
    });
  } else {
    bounds_kernel<float><<<1, kBlockThreads, 0, stream>>>(
        index.const_data_ptr<int64_t>(), nullptr, count, out.mutable_data_ptr<int64_t>());
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const auto host = out.cpu();
  const int64_t* p = host.const_data_ptr<int64_t>();
  Bounds bounds{p[0], p[1], 0.0};
  std::memcpy(&bounds.smallest, p + 2, sizeof(double));
  return bounds;
}

// ------------------------------------------------------------------------------- updates

// One block. Leaf k is written when no later position repeats it (last write wins; with
// `distinct` the caller has already kept the last write of each leaf); then the ancestors,
// level by level: parents shared by several leaves get the same value from each thread, and
// __syncthreads makes each level visible before the next is read. With `top`, the maximum of
// all `count_all` values of `all_values` (repeats included) is folded into *top as
// torch.maximum(top, values.max()) does (NaN wins).
template <typename scalar_t, bool kSum, bool kMin>
__global__ void tree_update_kernel(scalar_t* sums, scalar_t* mins,
                                   const int64_t* __restrict__ index,
                                   const scalar_t* __restrict__ value, int64_t count,
                                   int64_t capacity, bool distinct, scalar_t* top,
                                   const scalar_t* __restrict__ all_values, int64_t count_all) {
  __shared__ scalar_t largest[kBlockThreads];
  if (top != nullptr) {
    scalar_t most = *top;
    for (int64_t k = threadIdx.x; k < count_all; k += blockDim.x) {
      most = nan_max(most, all_values[k]);
    }
    largest[threadIdx.x] = most;
  }
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    const int64_t leaf = index[k];
    bool last = true;
    for (int64_t later = k + 1; later < count && last && !distinct; ++later) {
      last = index[later] != leaf;
    }
    if (last) {
      if constexpr (kSum) sums[capacity + leaf] = value[k];
      if constexpr (kMin) mins[capacity + leaf] = value[k];
    }
  }
  __syncthreads();
  if (top != nullptr) {
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) {
        largest[threadIdx.x] = nan_max(largest[threadIdx.x], largest[threadIdx.x + half]);
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) *top = largest[0];
  }
  for (int64_t shift = 1; (capacity >> shift) >= 1; ++shift) {
    for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
      const int64_t node = (capacity + index[k]) >> shift;
      if constexpr (kSum) sums[node] = sums[2 * node] + sums[2 * node + 1];
      if constexpr (kMin) mins[node] = nan_min(mins[2 * node], mins[2 * node + 1]);
    }
    __syncthreads();
  }
}

// Writes `value` at leaves `index` (contiguous, checked, not empty) of the sum tree and/or
// the min tree (either may be undefined), and folds the values' maximum into `top` when it
// is defined.
template <bool kSum, bool kMin>
void launch_tree_update(at::Tensor& sum_tree, at::Tensor& min_tree, const at::Tensor& idx,
                        const at::Tensor& val, int64_t capacity, at::Tensor* top) {
  const int64_t count = idx.numel();
  auto leaves = idx;
  auto last_values = val;
  const bool distinct = count > kPairwiseDedupMax;
  if (distinct) {
    // Many writes: keep the last position of each leaf with a stable sort instead of the
    // kernel's pairwise scan.
    const auto [sorted, order] = at::sort(idx, /*stable=*/true, /*dim=*/0, /*descending=*/false);
    auto last = at::ones_like(sorted, sorted.options().dtype(at::kBool));
    last.narrow(0, 0, count - 1)
        .copy_(sorted.narrow(0, 0, count - 1) != sorted.narrow(0, 1, count - 1));
    leaves = sorted.masked_select(last);
    last_values = val.index_select(0, order.masked_select(last));
  }
  const at::Tensor& like = kSum ? sum_tree : min_tree;
  at::Tensor sums, mins;
  if constexpr (kSum) sums = sum_tree.is_contiguous() ? sum_tree : sum_tree.contiguous();
  if constexpr (kMin) mins = min_tree.is_contiguous() ? min_tree : min_tree.contiguous();
  auto stream = c10::cuda::getCurrentCUDAStream();
  const auto type = like.scalar_type();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, type, "rl_core_tree_update", [&] {
    tree_update_kernel<scalar_t, kSum, kMin><<<1, kBlockThreads, 0, stream>>>(
        kSum ? sums.mutable_data_ptr<scalar_t>() : nullptr,
        kMin ? mins.mutable_data_ptr<scalar_t>() : nullptr, leaves.const_data_ptr<int64_t>(),
        last_values.const_data_ptr<scalar_t>(), leaves.numel(), capacity, distinct,
        top != nullptr ? top->mutable_data_ptr<scalar_t>() : nullptr,
        val.const_data_ptr<scalar_t>(), count);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  if constexpr (kSum) {
    if (!sums.is_same(sum_tree)) sum_tree.copy_(sums);
  }
  if constexpr (kMin) {
    if (!mins.is_same(min_tree)) min_tree.copy_(mins);
  }
}

// The leaves of an update, contiguous and checked against [0, capacity) (one device sync).
at::Tensor checked_cuda_leaves(const char* op, const at::Tensor& index, int64_t capacity) {
  auto idx = index.contiguous();
  const Bounds bounds = read_bounds(idx, at::Tensor());
  check_leaf_range(op, bounds.low, bounds.high, capacity);
  return idx;
}

// One tree: kSum picks the sum tree's kernel, else the min tree's.
template <bool kSum>
void one_tree_update_cuda(const char* op, at::Tensor& tree, const at::Tensor& index,
                          const at::Tensor& value) {
  const int64_t capacity = check_tree_layout(op, tree, &index, value);
  if (index.numel() == 0) return;
  const c10::cuda::CUDAGuard guard(tree.device());
  const auto idx = checked_cuda_leaves(op, index, capacity);
  at::Tensor none;
  launch_tree_update<kSum, !kSum>(kSum ? tree : none, kSum ? none : tree, idx,
                                  value.contiguous(), capacity, nullptr);
}

void sum_tree_update_cuda(at::Tensor& tree, const at::Tensor& index, const at::Tensor& value) {
  one_tree_update_cuda<true>("sum_tree_update_", tree, index, value);
}

void min_tree_update_cuda(at::Tensor& tree, const at::Tensor& index, const at::Tensor& value) {
  one_tree_update_cuda<false>("min_tree_update_", tree, index, value);
}

// Both trees in one kernel: one launch and one level-by-level pass instead of two.
void sum_min_tree_update_cuda(at::Tensor& sum_tree, at::Tensor& min_tree,
                              const at::Tensor& index, const at::Tensor& value) {
  constexpr const char* op = "sum_min_tree_update_";
  const int64_t capacity = check_tree_layout(op, sum_tree, &index, value);
  check_tree_pair(op, sum_tree, min_tree);
  if (index.numel() == 0) return;
  const c10::cuda::CUDAGuard guard(sum_tree.device());
  const auto idx = checked_cuda_leaves(op, index, capacity);
  launch_tree_update<true, true>(sum_tree, min_tree, idx, value.contiguous(), capacity, nullptr);
}

// A prioritized sampler's update: the index range and the smallest priority read back in
// one sync and checked before anything is written; the values (priority + eps) ** alpha by
// torch's own add and pow (so they round as the reference's do); then one kernel writes
// both trees and folds the values' maximum into max_value.
void sum_min_tree_priority_update_cuda(at::Tensor& sum_tree, at::Tensor& min_tree,
                                       at::Tensor& max_value, const at::Tensor& index,
                                       const at::Tensor& priority, double eps, double alpha,
                                       int64_t max_index) {
  constexpr const char* op = "sum_min_tree_priority_update_";
  const int64_t capacity = check_tree_layout(op, sum_tree, &index, priority);
  check_tree_pair(op, sum_tree, min_tree);
  check_priority_bounds(op, sum_tree, max_value, max_index, capacity);
  if (index.numel() == 0) return;
  const c10::cuda::CUDAGuard guard(sum_tree.device());
  const auto idx = index.contiguous();
  const auto raw = priority.contiguous();
  const Bounds bounds = read_bounds(idx, raw);
  check_priority_data(op, bounds.low, bounds.high, bounds.smallest, max_index);
  const auto value = raw.add(eps).pow_(alpha);
  launch_tree_update<true, true>(sum_tree, min_tree, idx, value, capacity, &max_value);
}

// --------------------------------------------------------------------------------- search

// The descent of sum_tree_find_prefixsum from the root for one query of mass `remaining`:
// right when the mass is >= the left child's sum and the right child holds mass, subtracting
// the left sum. Returns the leaf's node number.
template <typename scalar_t>
__device__ int64_t descend(const scalar_t* __restrict__ tree, int64_t capacity,
                           scalar_t remaining) {
  if (remaining < scalar_t(0)) remaining = scalar_t(0);  // clamp(min=0); NaN stays NaN
  int64_t node = 1;
  while (node < capacity) {
    const int64_t left = 2 * node;
    const scalar_t left_sum = tree[left];
    const bool go_right = remaining >= left_sum && tree[left + 1] > scalar_t(0);
    if (go_right) remaining = remaining - left_sum;
    node = left + (go_right ? 1 : 0);
  }
  return node;
}

template <typename scalar_t>
__global__ void find_prefixsum_kernel(const scalar_t* __restrict__ tree,
                                      const scalar_t* __restrict__ query, int64_t* out,
                                      int64_t count, int64_t capacity) {
  const int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (k >= count) return;
  out[k] = descend(tree, capacity, query[k]) - capacity;
}

at::Tensor sum_tree_find_prefixsum_cuda(const at::Tensor& tree, const at::Tensor& value) {
  constexpr const char* op = "sum_tree_find_prefixsum";
  const int64_t capacity = check_tree_layout(op, tree, nullptr, value);
  auto leaf = at::empty(value.sizes(), value.options().dtype(at::kLong));
  const int64_t count = value.numel();
  if (count == 0) return leaf;
  const c10::cuda::CUDAGuard guard(tree.device());
  const auto t = tree.contiguous();
  const auto q = value.contiguous();
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, tree.scalar_type(), op, [&] {
    find_prefixsum_kernel<scalar_t><<<blocks_for(count), kThreads, 0, stream>>>(
        t.const_data_ptr<scalar_t>(), q.const_data_ptr<scalar_t>(),
        leaf.mutable_data_ptr<int64_t>(), count, capacity);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return leaf;
}

// One thread per draw: the query uniform * total (rounded to the dtype, as torch's mul
// does), the descent, then leaf / smallest (division in the op math type, as torch's div);
// the power (.) ** -beta is torch's own pow, so the weights round as the reference's do.
template <typename scalar_t>
__global__ void sample_kernel(const scalar_t* __restrict__ tree,
                              const scalar_t* __restrict__ smallest,
                              const scalar_t* __restrict__ uniform, int64_t* leaf,
                              scalar_t* weight, int64_t count, int64_t capacity) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (k >= count) return;
  const scalar_t query =
      static_cast<scalar_t>(static_cast<acc_t>(uniform[k]) * static_cast<acc_t>(tree[1]));
  const int64_t node = descend(tree, capacity, query);
  leaf[k] = node - capacity;
  weight[k] = static_cast<scalar_t>(static_cast<acc_t>(tree[node]) / static_cast<acc_t>(*smallest));
}

std::tuple<at::Tensor, at::Tensor> sum_tree_sample_cuda(const at::Tensor& sum_tree,
                                                        const at::Tensor& min_tree,
                                                        const at::Tensor& uniform, double beta) {
  constexpr const char* op = "sum_tree_sample";
  at::Tensor leaf, weight;
  const int64_t capacity = sample_outputs(op, sum_tree, min_tree, uniform, leaf, weight);
  const int64_t count = uniform.numel();
  if (count == 0) return {leaf, weight};
  const c10::cuda::CUDAGuard guard(sum_tree.device());
  const auto t = sum_tree.contiguous();
  const auto q = uniform.contiguous();
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, sum_tree.scalar_type(), op, [&] {
    sample_kernel<scalar_t><<<blocks_for(count), kThreads, 0, stream>>>(
        t.const_data_ptr<scalar_t>(), min_tree.const_data_ptr<scalar_t>() + min_tree.stride(0),
        q.const_data_ptr<scalar_t>(), leaf.mutable_data_ptr<int64_t>(),
        weight.mutable_data_ptr<scalar_t>(), count, capacity);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  weight.pow_(-beta);
  return {leaf, weight};
}

}  // namespace

TORCH_LIBRARY_IMPL(rl_core, CUDA, m) {
  m.impl("sum_tree_update_", &sum_tree_update_cuda);
  m.impl("min_tree_update_", &min_tree_update_cuda);
  m.impl("sum_tree_find_prefixsum", &sum_tree_find_prefixsum_cuda);
  m.impl("sum_min_tree_update_", &sum_min_tree_update_cuda);
  m.impl("sum_tree_sample", &sum_tree_sample_cuda);
  m.impl("sum_min_tree_priority_update_", &sum_min_tree_priority_update_cuda);
}

}  // namespace rl_kernels
