// CPU kernels of the rl_core ops: reverse scans over [T, N] (GAE, TD(lambda), V-trace) and
// the sum/min segment trees of prioritized replay. Registered for the CPU key of the ops
// that rl_core.ops defines; see rl_core.ops.reference for the formulas.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <torch/library.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "../checks.h"
#include "../layout.h"
#include "ascent.h"
#include "descent.h"

namespace rl_kernels {
namespace {

constexpr const char* kGae = "generalized_advantage_estimate";
constexpr const char* kTdLambda = "td_lambda_return_estimate";
constexpr const char* kVtrace = "vtrace_advantage_estimate";

// Runs step(offset, running) for t = T-1 .. 0 over each of the N sequences, running being
// the sequence's carry, started at init(j). Sequences go in blocks of kBlock that advance
// together one time step at a time: the blocks' carries are independent chains the CPU
// overlaps, and the block's memory stays in L1 whichever axis (time or sequence) is the
// fast one.
constexpr int64_t kBlock = 16;

// V-trace's carry from step t + 1 to step t: the correction d[t + 1] and the target v[t + 1].
template <typename acc_t>
struct VtraceCarry {
  acc_t correction;
  acc_t target;
};

template <typename acc_t, typename Init, typename Step>
void reverse_scan(int64_t steps, int64_t n, int64_t st, int64_t sn, Init init, Step step) {
  if (steps == 0) return;
  acc_t running[kBlock];
  for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
    const int64_t width = std::min(kBlock, n - j0);
    for (int64_t b = 0; b < width; ++b) running[b] = init(j0 + b);
    for (int64_t t = steps - 1; t >= 0; --t) {
      const int64_t base = t * st + j0 * sn;
      if (width == kBlock) {
        for (int64_t b = 0; b < kBlock; ++b) step(base + b * sn, running[b]);
      } else {
        for (int64_t b = 0; b < width; ++b) step(base + b * sn, running[b]);
      }
    }
  }
}

std::tuple<at::Tensor, at::Tensor> gae_cpu(double gamma, double lmbda,
                                           const at::Tensor& state_value,
                                           const at::Tensor& next_state_value,
                                           const at::Tensor& reward, const at::Tensor& done,
                                           const at::Tensor& terminated) {
  check_value_layout(kGae,
                     {{"state_value", &state_value},
                      {"next_state_value", &next_state_value},
                      {"reward", &reward}},
                     {{"done", &done}, {"terminated", &terminated}});
  const auto r = dense_layout(reward);
  const auto v = strided_like(state_value, r);
  const auto nv = strided_like(next_state_value, r);
  const auto d = strided_like(done, r);
  const auto term = strided_like(terminated, r);
  auto advantage = at::empty_like(r);
  auto target = at::empty_like(r);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, r.scalar_type(), kGae, [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const acc_t g = static_cast<acc_t>(gamma);
    const acc_t gl = static_cast<acc_t>(gamma * lmbda);
    const scalar_t* pv = v.const_data_ptr<scalar_t>();
    const scalar_t* pnv = nv.const_data_ptr<scalar_t>();
    const scalar_t* pr = r.const_data_ptr<scalar_t>();
    const bool* pd = d.const_data_ptr<bool>();
    const bool* pt = term.const_data_ptr<bool>();
    scalar_t* pa = advantage.mutable_data_ptr<scalar_t>();
    scalar_t* py = target.mutable_data_ptr<scalar_t>();
    reverse_scan<acc_t>(
        r.size(0), r.size(1), r.stride(0), r.stride(1), [](int64_t) { return acc_t(0); },
        [&](int64_t k, acc_t& running) {
          const acc_t value = static_cast<acc_t>(pv[k]);
          const acc_t bootstrap = pt[k] ? acc_t(0) : g;
          const acc_t decay = pd[k] ? acc_t(0) : gl;
          const acc_t delta =
              static_cast<acc_t>(pr[k]) + bootstrap * static_cast<acc_t>(pnv[k]) - value;
          running = delta + decay * running;
          pa[k] = static_cast<scalar_t>(running);
          py[k] = static_cast<scalar_t>(running + value);
        });
  });
  return {advantage, target};
}

at::Tensor td_lambda_cpu(double gamma, double lmbda, const at::Tensor& next_state_value,
                         const at::Tensor& reward, const at::Tensor& done,
                         const at::Tensor& terminated) {
  check_value_layout(kTdLambda, {{"next_state_value", &next_state_value}, {"reward", &reward}},
                     {{"done", &done}, {"terminated", &terminated}});
  const auto r = dense_layout(reward);
  const auto nv = strided_like(next_state_value, r);
  const auto d = strided_like(done, r);
  const auto term = strided_like(terminated, r);
  auto target = at::empty_like(r);
  const int64_t steps = r.size(0);
  const int64_t st = r.stride(0);
  const int64_t sn = r.stride(1);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, r.scalar_type(), kTdLambda, [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const acc_t g = static_cast<acc_t>(gamma);
    const acc_t l = static_cast<acc_t>(lmbda);
    const scalar_t* pnv = nv.const_data_ptr<scalar_t>();
    const scalar_t* pr = r.const_data_ptr<scalar_t>();
    const bool* pd = d.const_data_ptr<bool>();
    const bool* pt = term.const_data_ptr<bool>();
    scalar_t* py = target.mutable_data_ptr<scalar_t>();
    // Seeded with the last bootstrap value: the last step is a plain TD(0) target.
    reverse_scan<acc_t>(
        steps, r.size(1), st, sn,
        [&](int64_t j) { return static_cast<acc_t>(pnv[(steps - 1) * st + j * sn]); },
        [&](int64_t k, acc_t& running) {
          const acc_t bootstrap = pt[k] ? acc_t(0) : g;
          const acc_t mix = pd[k] ? acc_t(0) : l;
          const acc_t next = static_cast<acc_t>(pnv[k]);
          running = static_cast<acc_t>(pr[k]) +
                    bootstrap * ((acc_t(1) - mix) * next + mix * running);
          py[k] = static_cast<scalar_t>(running);
        });
  });
  return target;
}

std::tuple<at::Tensor, at::Tensor> vtrace_cpu(
    double gamma, double rho_thresh, double c_thresh, const at::Tensor& log_pi,
    const at::Tensor& log_mu, const at::Tensor& state_value, const at::Tensor& next_state_value,
    const at::Tensor& reward, const at::Tensor& done, const at::Tensor& terminated) {
  check_value_layout(kVtrace,
                     {{"log_pi", &log_pi},
                      {"log_mu", &log_mu},
                      {"state_value", &state_value},
                      {"next_state_value", &next_state_value},
                      {"reward", &reward}},
                     {{"done", &done}, {"terminated", &terminated}});
  const auto r = dense_layout(reward);
  const auto lp = strided_like(log_pi, r);
  const auto lm = strided_like(log_mu, r);
  const auto v = strided_like(state_value, r);
  const auto nv = strided_like(next_state_value, r);
  const auto d = strided_like(done, r);
  const auto term = strided_like(terminated, r);
  auto advantage = at::empty_like(r);
  auto target = at::empty_like(r);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, r.scalar_type(), kVtrace, [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const acc_t g = static_cast<acc_t>(gamma);
    const acc_t rho_max = static_cast<acc_t>(rho_thresh);
    const acc_t c_max = static_cast<acc_t>(c_thresh);
    const scalar_t* plp = lp.const_data_ptr<scalar_t>();
    const scalar_t* plm = lm.const_data_ptr<scalar_t>();
    const scalar_t* pv = v.const_data_ptr<scalar_t>();
    const scalar_t* pnv = nv.const_data_ptr<scalar_t>();
    const scalar_t* pr = r.const_data_ptr<scalar_t>();
    const bool* pd = d.const_data_ptr<bool>();
    const bool* pt = term.const_data_ptr<bool>();
    scalar_t* pa = advantage.mutable_data_ptr<scalar_t>();
    scalar_t* py = target.mutable_data_ptr<scalar_t>();
    // The carry holds, for step t + 1, the correction d[t + 1] and the target v[t + 1]; it
    // starts as d[T] = 0 and the bootstrap value next_state_value[T - 1], so that the last
    // step's advantage reads the bootstrap value (as an episode end does).
    const int64_t steps = r.size(0);
    const int64_t st = r.stride(0);
    const int64_t sn = r.stride(1);
    reverse_scan<VtraceCarry<acc_t>>(
        steps, r.size(1), st, sn,
        [&](int64_t j) {
          return VtraceCarry<acc_t>{acc_t(0),
                                    static_cast<acc_t>(pnv[(steps - 1) * st + j * sn])};
        },
        [&](int64_t k, VtraceCarry<acc_t>& carry) {
          const acc_t ratio = std::exp(static_cast<acc_t>(plp[k]) - static_cast<acc_t>(plm[k]));
          const acc_t rho = nan_min(ratio, rho_max);
          const acc_t c = nan_min(ratio, c_max);
          const bool done_here = pd[k];
          const acc_t bootstrap = pt[k] ? acc_t(0) : g;
          const acc_t value = static_cast<acc_t>(pv[k]);
          const acc_t next = static_cast<acc_t>(pnv[k]);
          const acc_t rew = static_cast<acc_t>(pr[k]);
          const acc_t next_target = done_here ? next : carry.target;
          pa[k] = static_cast<scalar_t>(rho * (rew + bootstrap * next_target - value));
          const acc_t trace = done_here ? acc_t(0) : g * c * carry.correction;
          carry.correction = rho * (rew + bootstrap * next - value) + trace;
          carry.target = value + carry.correction;
          py[k] = static_cast<scalar_t>(carry.target);
        });
  });
  return {advantage, target};
}

// Segment trees. Leaves live at [capacity, 2 * capacity); node i combines 2i and 2i + 1.
// The leaves are written in order (a repeated leaf keeps its last value), then their
// ancestors level by level (ascent.h), so each node ends up equal to the combination of its
// final children, as in the reference.
template <typename Combine>
void tree_update_cpu(const char* op, at::Tensor& tree, const at::Tensor& index,
                     const at::Tensor& value, Combine combine) {
  const int64_t capacity = check_tree_layout(op, tree, &index, value);
  const int64_t count = index.numel();
  if (count == 0) return;
  const auto idx = checked_cpu_leaves(op, index, capacity);
  const int64_t* pi = idx.const_data_ptr<int64_t>();
  const auto val = value.contiguous();
  at::Tensor work = writable_in_place(tree) ? tree : tree.contiguous();
  std::vector<int64_t> nodes(static_cast<size_t>(count));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, tree.scalar_type(),
                                  "rl_core_tree_update_", [&] {
    const auto pt = strided<scalar_t>(work);
    const scalar_t* pv = val.const_data_ptr<scalar_t>();
    for (int64_t k = 0; k < count; ++k) {
      nodes[k] = pi[k] + capacity;
      pt[nodes[k]] = pv[k];
      __builtin_prefetch(pt.at(nodes[k] >> 1), 1);
    }
    recompute_ancestors(
        capacity, nodes, [&](int64_t node) { pt[node] = combine(pt[2 * node], pt[2 * node + 1]); },
        [&](int64_t node) { __builtin_prefetch(pt.at(node), 1); });
  });
  if (!work.is_same(tree)) tree.copy_(work);
}

void sum_tree_update_cpu(at::Tensor& tree, const at::Tensor& index, const at::Tensor& value) {
  tree_update_cpu("sum_tree_update_", tree, index, value,
                  [](auto a, auto b) { return a + b; });
}

void min_tree_update_cpu(at::Tensor& tree, const at::Tensor& index, const at::Tensor& value) {
  tree_update_cpu("min_tree_update_", tree, index, value,
                  [](auto a, auto b) { return nan_min(a, b); });
}

// One descent per query (descent.h), clamped at 0 first.
at::Tensor sum_tree_find_prefixsum_cpu(const at::Tensor& tree, const at::Tensor& value) {
  const int64_t capacity = check_tree_layout("sum_tree_find_prefixsum", tree, nullptr, value);
  auto leaf = at::empty(value.sizes(), value.options().dtype(at::kLong));
  const int64_t count = value.numel();
  if (count == 0) return leaf;
  const auto q = value.contiguous();
  int64_t* node = leaf.mutable_data_ptr<int64_t>();
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, tree.scalar_type(), "sum_tree_find_prefixsum", [&] {
        const auto pt = strided_const<scalar_t>(tree);
        const scalar_t* pq = q.const_data_ptr<scalar_t>();
        std::vector<scalar_t> remaining(pq, pq + count);
        for (int64_t k = 0; k < count; ++k) {
          // clamp(min=0); NaN stays NaN.
          if (remaining[k] < scalar_t(0)) remaining[k] = scalar_t(0);
        }
        descend_sum_tree(pt, capacity, count, remaining.data(), node);
        for (int64_t k = 0; k < count; ++k) node[k] -= capacity;
      });
  return leaf;
}

}  // namespace

TORCH_LIBRARY_IMPL(rl_core, CPU, m) {
  m.impl("generalized_advantage_estimate", &gae_cpu);
  m.impl("td_lambda_return_estimate", &td_lambda_cpu);
  m.impl("vtrace_advantage_estimate", &vtrace_cpu);
  m.impl("sum_tree_update_", &sum_tree_update_cpu);
  m.impl("min_tree_update_", &min_tree_update_cpu);
  m.impl("sum_tree_find_prefixsum", &sum_tree_find_prefixsum_cpu);
}

}  // namespace rl_kernels
