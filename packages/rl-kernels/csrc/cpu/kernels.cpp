// CPU kernels of the rl_core ops: reverse scans over [T, N] (GAE, TD(lambda), V-trace) and
// the sum/min segment trees of prioritized replay. Registered for the CPU key of the ops
// that rl_core.ops defines; see rl_core.ops.reference for the formulas.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <torch/library.h>

#include <algorithm>
#include <tuple>

#include "../checks.h"

namespace rl_kernels {
namespace {

constexpr const char* kGae = "generalized_advantage_estimate";
constexpr const char* kTdLambda = "td_lambda_return_estimate";
constexpr const char* kVtrace = "vtrace_advantage_estimate";

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
  const auto v = state_value.contiguous();
  const auto nv = next_state_value.contiguous();
  const auto r = reward.contiguous();
  const auto d = done.contiguous();
  const auto term = terminated.contiguous();
  auto advantage = at::empty_like(r, at::MemoryFormat::Contiguous);
  auto target = at::empty_like(r, at::MemoryFormat::Contiguous);
  const int64_t steps = r.size(0);
  const int64_t n = r.size(1);
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
    std::vector<acc_t> running(static_cast<size_t>(n), acc_t(0));
    acc_t* run = running.data();
    for (int64_t t = steps - 1; t >= 0; --t) {
      const int64_t row = t * n;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t k = row + j;
        const acc_t value = static_cast<acc_t>(pv[k]);
        const acc_t bootstrap = pt[k] ? acc_t(0) : g;
        const acc_t decay = pd[k] ? acc_t(0) : gl;
        const acc_t delta =
            static_cast<acc_t>(pr[k]) + bootstrap * static_cast<acc_t>(pnv[k]) - value;
        const acc_t a = delta + decay * run[j];
        run[j] = a;
        pa[k] = static_cast<scalar_t>(a);
        py[k] = static_cast<scalar_t>(a + value);
      }
    }
  });
  return {advantage, target};
}

at::Tensor td_lambda_cpu(double gamma, double lmbda, const at::Tensor& next_state_value,
                         const at::Tensor& reward, const at::Tensor& done,
                         const at::Tensor& terminated) {
  check_value_layout(kTdLambda, {{"next_state_value", &next_state_value}, {"reward", &reward}},
                     {{"done", &done}, {"terminated", &terminated}});
  const auto nv = next_state_value.contiguous();
  const auto r = reward.contiguous();
  const auto d = done.contiguous();
  const auto term = terminated.contiguous();
  auto target = at::empty_like(r, at::MemoryFormat::Contiguous);
  const int64_t steps = r.size(0);
  const int64_t n = r.size(1);
  if (steps == 0 || n == 0) return target;
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
    std::vector<acc_t> running(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) running[j] = static_cast<acc_t>(pnv[(steps - 1) * n + j]);
    acc_t* run = running.data();
    for (int64_t t = steps - 1; t >= 0; --t) {
      const int64_t row = t * n;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t k = row + j;
        const acc_t bootstrap = pt[k] ? acc_t(0) : g;
        const acc_t mix = pd[k] ? acc_t(0) : l;
        const acc_t next = static_cast<acc_t>(pnv[k]);
        const acc_t ret =
            static_cast<acc_t>(pr[k]) + bootstrap * ((acc_t(1) - mix) * next + mix * run[j]);
        run[j] = ret;
        py[k] = static_cast<scalar_t>(ret);
      }
    }
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
  const auto lp = log_pi.contiguous();
  const auto lm = log_mu.contiguous();
  const auto v = state_value.contiguous();
  const auto nv = next_state_value.contiguous();
  const auto r = reward.contiguous();
  const auto d = done.contiguous();
  const auto term = terminated.contiguous();
  auto advantage = at::empty_like(r, at::MemoryFormat::Contiguous);
  auto target = at::empty_like(r, at::MemoryFormat::Contiguous);
  const int64_t steps = r.size(0);
  const int64_t n = r.size(1);
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
    std::vector<acc_t> running(static_cast<size_t>(n), acc_t(0));
    acc_t* run = running.data();
    for (int64_t t = steps - 1; t >= 0; --t) {
      const int64_t row = t * n;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t k = row + j;
        const acc_t ratio =
            std::exp(static_cast<acc_t>(plp[k]) - static_cast<acc_t>(plm[k]));
        const acc_t rho = nan_min(ratio, rho_max);
        const acc_t c = nan_min(ratio, c_max);
        const acc_t not_done = pd[k] ? acc_t(0) : acc_t(1);
        const acc_t bootstrap = pt[k] ? acc_t(0) : g;
        const acc_t value = static_cast<acc_t>(pv[k]);
        const acc_t next = static_cast<acc_t>(pnv[k]);
        const acc_t rew = static_cast<acc_t>(pr[k]);
        const acc_t next_correction = run[j] * not_done;
        pa[k] = static_cast<scalar_t>(rho * (rew + bootstrap * (next + next_correction) - value));
        const acc_t delta = rho * (rew + bootstrap * next - value);
        const acc_t correction = delta + g * c * not_done * run[j];
        run[j] = correction;
        py[k] = static_cast<scalar_t>(value + correction);
      }
    }
  });
  return {advantage, target};
}

// Segment trees. Leaves live at [capacity, 2 * capacity); node i combines 2i and 2i + 1.
// Updates run one leaf after the other, each refreshing its ancestors from their children,
// so a repeated leaf keeps its last value and every node ends up equal to the combination
// of its final children, as in the reference.
template <typename Combine>
void tree_update_cpu(const char* op, at::Tensor& tree, const at::Tensor& index,
                     const at::Tensor& value, Combine combine) {
  const int64_t capacity = check_tree_layout(op, tree, &index, value);
  const int64_t count = index.numel();
  if (count == 0) return;
  const auto idx = index.contiguous();
  const int64_t* pi = idx.const_data_ptr<int64_t>();
  const auto [low, high] = std::minmax_element(pi, pi + count);
  check_leaf_range(op, *low, *high, capacity);
  const auto val = value.contiguous();
  at::Tensor work = tree.is_contiguous() ? tree : tree.contiguous();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, tree.scalar_type(), "rl_core_tree_update_", [&] {
    scalar_t* pt = work.mutable_data_ptr<scalar_t>();
    const scalar_t* pv = val.const_data_ptr<scalar_t>();
    for (int64_t k = 0; k < count; ++k) {
      int64_t node = pi[k] + capacity;
      pt[node] = pv[k];
      for (node >>= 1; node >= 1; node >>= 1) {
        pt[node] = combine(pt[2 * node], pt[2 * node + 1]);
      }
    }
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

at::Tensor sum_tree_find_prefixsum_cpu(const at::Tensor& tree, const at::Tensor& value) {
  const int64_t capacity = check_tree_layout("sum_tree_find_prefixsum", tree, nullptr, value);
  auto leaf = at::empty(value.sizes(), value.options().dtype(at::kLong));
  const int64_t count = value.numel();
  if (count == 0) return leaf;
  const auto t = tree.contiguous();
  const auto q = value.contiguous();
  int64_t* out = leaf.mutable_data_ptr<int64_t>();
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, tree.scalar_type(), "sum_tree_find_prefixsum", [&] {
        const scalar_t* pt = t.const_data_ptr<scalar_t>();
        const scalar_t* pq = q.const_data_ptr<scalar_t>();
        for (int64_t k = 0; k < count; ++k) {
          scalar_t remaining = pq[k];
          // clamp(min=0), NaN kept.
          if (remaining < scalar_t(0)) remaining = scalar_t(0);
          int64_t node = 1;
          while (node < capacity) {
            const int64_t left = 2 * node;
            const scalar_t left_sum = pt[left];
            const bool go_right = remaining >= left_sum && pt[left + 1] > scalar_t(0);
            if (go_right) remaining = remaining - left_sum;
            node = left + (go_right ? 1 : 0);
          }
          out[k] = node - capacity;
        }
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
