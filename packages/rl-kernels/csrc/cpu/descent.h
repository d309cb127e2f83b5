// The prefix-sum descent of a sum tree, shared by the CPU kernels of sum_tree_find_prefixsum
// and sum_tree_sample.
#pragma once

#include <cstdint>

#include "strided.h"

namespace rl_kernels {

// Walks `count` queries from the root down to the leaves of the sum tree `tree` (leaves at
// [capacity, 2 * capacity), node i combines 2i and 2i + 1; read at its stride). On entry
// remaining[k] holds query k's mass (already clamped at 0); on exit node[k] is its leaf's
// node number and remaining[k] the mass left inside that leaf. At each level a query goes
// right when its mass is >= the left child's sum and the right child holds mass, subtracting
// the left sum.
//
// All queries go a level at a time: the loads of one level are independent, so their cache
// misses overlap, and each query prefetches the children it reads at the next level. The
// direction is random, so it is taken without a branch (a branch would mispredict half the
// time, which costs more than the cache misses on a tree that fits in the cache): going left
// subtracts the +0 of `step[0]`, and x - (+0) is x itself for every x, -0 and NaN included,
// so the values are those of "remaining - left_sum if right else remaining".
template <typename scalar_t>
void descend_sum_tree(Strided<const scalar_t> tree, int64_t capacity, int64_t count,
                      scalar_t* remaining, int64_t* node) {
  for (int64_t k = 0; k < count; ++k) node[k] = 1;
  for (int64_t level = 1; level < capacity; level <<= 1) {
    for (int64_t k = 0; k < count; ++k) {
      const int64_t left = 2 * node[k];
      const scalar_t step[2] = {scalar_t(0), tree[left]};
      const bool go_right = (remaining[k] >= step[1]) & (tree[left + 1] > scalar_t(0));
      remaining[k] = static_cast<scalar_t>(remaining[k] - step[go_right]);
      node[k] = left + static_cast<int64_t>(go_right);
      __builtin_prefetch(tree.at(2 * node[k]));  // read at the next level
    }
  }
}

}  // namespace rl_kernels
