// The walk from written leaves up to the root of a segment tree, shared by the CPU kernels
// of the tree updates (sum_tree_update_, min_tree_update_, sum_min_tree_update_).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace rl_kernels {

// Levels of at most this many nodes are walked without repeats (see below). A batch of
// leaves shares most of its ancestors near the root: 256 random leaves of 200,000 visit the
// 13 levels of at most 4,096 nodes 3,328 times, about 1,220 distinct nodes.
constexpr int64_t kDistinctLevel = 4096;

// Recomputes the ancestors of `nodes` (node numbers of leaves, already written; node i
// combines 2i and 2i + 1, leaves at [capacity, 2 * capacity)) level by level, from the
// leaves' parents to the root: recompute(node) sets one node from its two children, and is
// called for a level only once every node below it is final, so each ancestor ends up the
// combination of its final children, whatever the order and the repeats of `nodes`.
//
// One level at a time (rather than leaf by leaf up to the root), the nodes of a level are
// independent of one another, so their cache misses overlap; prefetch(node) announces a
// node of the next level. In a level of at most kDistinctLevel nodes, a bitmap of the
// level skips the repeats of a node (recomputing it again would give the same value), and
// the next levels start from the distinct nodes only. `nodes` is overwritten.
template <typename Recompute, typename Prefetch>
void recompute_ancestors(int64_t capacity, std::vector<int64_t>& nodes, Recompute recompute,
                         Prefetch prefetch) {
  int64_t count = static_cast<int64_t>(nodes.size());
  uint64_t seen[kDistinctLevel / 64];
  for (int64_t level = capacity >> 1; level >= 1; level >>= 1) {
    const bool distinct = level <= kDistinctLevel;
    if (distinct) std::fill(seen, seen + (level + 63) / 64, uint64_t(0));
    int64_t kept = 0;
    for (int64_t k = 0; k < count; ++k) {
      const int64_t node = nodes[k] >> 1;
      if (distinct) {
        const int64_t bit = node - level;  // a level's nodes are [level, 2 * level)
        uint64_t& word = seen[bit >> 6];
        const uint64_t mask = uint64_t(1) << (bit & 63);
        if (word & mask) continue;
        word |= mask;
      }
      nodes[kept++] = node;
      recompute(node);
      prefetch(node >> 1);  // recomputed at the next level
    }
    count = kept;
  }
}

}  // namespace rl_kernels
