// CPU kernels of the fused prioritized-replay ops of rl_core: sum_min_tree_update_ (the
// same leaves written into a sum tree and a min tree, one pass) and sum_tree_sample
// (prefix-sum draws plus importance weights, one pass). They give bit for bit what the
// separate ops give (see rl_core.ops.reference.sum_min_tree_update_ / sum_tree_sample).
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <torch/library.h>

#include <algorithm>
#include <tuple>
#include <type_traits>
#include <vector>

#include "../checks.h"
#include "ascent.h"
#include "descent.h"

namespace rl_kernels {
namespace {

// Both trees with one list of nodes: the leaves in order (a repeated leaf keeps its last
// value), then their ancestors level by level (ascent.h).
void sum_min_tree_update_cpu(at::Tensor& sum_tree, at::Tensor& min_tree,
                             const at::Tensor& index, const at::Tensor& value) {
  constexpr const char* op = "sum_min_tree_update_";
  const int64_t capacity = check_tree_layout(op, sum_tree, &index, value);
  check_tree_pair(op, sum_tree, min_tree);
  const int64_t count = index.numel();
  if (count == 0) return;
  const auto idx = checked_cpu_leaves(op, index, capacity);
  const int64_t* pi = idx.const_data_ptr<int64_t>();
  const auto val = value.contiguous();
  at::Tensor sums = writable_in_place(sum_tree) ? sum_tree : sum_tree.contiguous();
  at::Tensor mins = writable_in_place(min_tree) ? min_tree : min_tree.contiguous();
  std::vector<int64_t> nodes(static_cast<size_t>(count));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, sum_tree.scalar_type(), op, [&] {
    const auto ps = strided<scalar_t>(sums);
    const auto pm = strided<scalar_t>(mins);
    const scalar_t* pv = val.const_data_ptr<scalar_t>();
    for (int64_t k = 0; k < count; ++k) {
      const int64_t node = pi[k] + capacity;
      nodes[k] = node;
      ps[node] = pv[k];
      pm[node] = pv[k];
      __builtin_prefetch(ps.at(node >> 1), 1);
      __builtin_prefetch(pm.at(node >> 1), 1);
    }
    recompute_ancestors(
        capacity, nodes,
        [&](int64_t node) {
          ps[node] = ps[2 * node] + ps[2 * node + 1];
          pm[node] = nan_min(pm[2 * node], pm[2 * node + 1]);
        },
        [&](int64_t node) {
          __builtin_prefetch(ps.at(node), 1);
          __builtin_prefetch(pm.at(node), 1);
        });
  });
  if (!sums.is_same(sum_tree)) sum_tree.copy_(sums);
  if (!mins.is_same(min_tree)) min_tree.copy_(mins);
}

// A prioritized sampler's update in one call: the checks (indices in [0, max_index),
// priorities >= 0 and not NaN) in one pass over the raw data before anything is written,
// the values (priority + eps) ** alpha by torch's own pow (so they round as the reference's
// do; the addition is one IEEE operation either way), their maximum into max_value, then
// the fused write of both trees.
void sum_min_tree_priority_update_cpu(at::Tensor& sum_tree, at::Tensor& min_tree,
                                      at::Tensor& max_value, const at::Tensor& index,
                                      const at::Tensor& priority, double eps, double alpha,
                                      int64_t max_index) {
  constexpr const char* op = "sum_min_tree_priority_update_";
  const int64_t capacity = check_tree_layout(op, sum_tree, &index, priority);
  check_tree_pair(op, sum_tree, min_tree);
  check_priority_bounds(op, sum_tree, max_value, max_index, capacity);
  const int64_t count = index.numel();
  if (count == 0) return;
  const auto idx = index.contiguous();
  const int64_t* pi = idx.const_data_ptr<int64_t>();
  const auto bounds = std::minmax_element(pi, pi + count);
  const auto raw = priority.contiguous();
  at::Tensor value;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, sum_tree.scalar_type(), op, [&] {
    const scalar_t* pp = raw.const_data_ptr<scalar_t>();
    double smallest = static_cast<double>(pp[0]);
    for (int64_t k = 0; k < count; ++k) {
      const double p = static_cast<double>(pp[k]);
      if (p != p) {  // NaN: torch.min gives NaN
        smallest = p;
        break;
      }
      smallest = std::min(smallest, p);
    }
    check_priority_data(op, *bounds.first, *bounds.second, smallest, max_index);
    if constexpr (std::is_same_v<scalar_t, float> || std::is_same_v<scalar_t, double>) {
      // torch's add, without its setup: eps cast to the dtype, one IEEE addition each.
      value = at::empty_like(raw);
      scalar_t* pv = value.mutable_data_ptr<scalar_t>();
      const scalar_t shift = static_cast<scalar_t>(eps);
      for (int64_t k = 0; k < count; ++k) pv[k] = pp[k] + shift;
      value.pow_(alpha);
    } else {
      value = raw.add(eps).pow_(alpha);  // half and bfloat16: as torch rounds eps and the sum
    }
    const scalar_t* pv = value.const_data_ptr<scalar_t>();
    scalar_t* top = max_value.mutable_data_ptr<scalar_t>();
    scalar_t largest = *top;
    for (int64_t k = 0; k < count; ++k) largest = nan_max(largest, pv[k]);
    *top = largest;
  });
  sum_min_tree_update_cpu(sum_tree, min_tree, idx, value);
}

// The descent of sum_tree_find_prefixsum (descent.h) for queries uniform * total; the leaf
// reached gives the weight (leaf / smallest) ** -beta, the power taken by torch's own pow
// so that it rounds as the reference does.
std::tuple<at::Tensor, at::Tensor> sum_tree_sample_cpu(const at::Tensor& sum_tree,
                                                       const at::Tensor& min_tree,
                                                       const at::Tensor& uniform, double beta) {
  constexpr const char* op = "sum_tree_sample";
  at::Tensor leaf, weight;
  const int64_t capacity = sample_outputs(op, sum_tree, min_tree, uniform, leaf, weight);
  const int64_t count = uniform.numel();
  if (count == 0) return {leaf, weight};
  const auto q = uniform.contiguous();
  int64_t* node = leaf.mutable_data_ptr<int64_t>();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, sum_tree.scalar_type(), op, [&] {
    const auto pt = strided_const<scalar_t>(sum_tree);
    const scalar_t* pq = q.const_data_ptr<scalar_t>();
    scalar_t* pw = weight.mutable_data_ptr<scalar_t>();
    const scalar_t total = pt[1];
    const scalar_t smallest = strided_const<scalar_t>(min_tree)[1];
    // pw holds each query's remaining mass during the descent, its weight afterwards.
    for (int64_t k = 0; k < count; ++k) {
      const scalar_t start = static_cast<scalar_t>(pq[k] * total);
      pw[k] = start < scalar_t(0) ? scalar_t(0) : start;  // clamp(min=0); NaN stays NaN
    }
    descend_sum_tree(pt, capacity, count, pw, node);
    for (int64_t k = 0; k < count; ++k) {
      pw[k] = static_cast<scalar_t>(pt[node[k]] / smallest);
      node[k] -= capacity;
    }
  });
  weight.pow_(-beta);
  return {leaf, weight};
}

}  // namespace

TORCH_LIBRARY_IMPL(rl_core, CPU, m) {
  m.impl("sum_min_tree_update_", &sum_min_tree_update_cpu);
  m.impl("sum_tree_sample", &sum_tree_sample_cpu);
  m.impl("sum_min_tree_priority_update_", &sum_min_tree_priority_update_cpu);
}

}  // namespace rl_kernels
