// CUDA kernels of the rl_core ops. Value ops: one thread per sequence (column of the
// [T, N] layout), scanning time backwards; reads of a time step are coalesced across
// threads when the sequences are the fast axis. Trees: the update runs in one block (levels separated by __syncthreads), the
// prefix-sum search one thread per query. Checks and formulas as in the CPU kernels.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <tuple>

#include "../checks.h"
#include "../layout.h"

namespace rl_kernels {
namespace {

constexpr int kThreads = 256;
// Up to this many writes, the update kernel finds repeated leaves by comparing pairs.
constexpr int64_t kPairwiseDedupMax = 4096;

int64_t blocks_for(int64_t n) { return (n + kThreads - 1) / kThreads; }

template <typename scalar_t>
__global__ void gae_kernel(int64_t steps, int64_t n, int64_t st, int64_t sn, double gamma, double lmbda,
                           const scalar_t* __restrict__ v, const scalar_t* __restrict__ nv,
                           const scalar_t* __restrict__ r, const bool* __restrict__ d,
                           const bool* __restrict__ term, scalar_t* __restrict__ adv,
                           scalar_t* __restrict__ tgt) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (j >= n) return;
  const acc_t g = static_cast<acc_t>(gamma);
  const acc_t gl = static_cast<acc_t>(gamma * lmbda);
  acc_t run = 0;
  for (int64_t t = steps - 1; t >= 0; --t) {
    const int64_t k = t * st + j * sn;
    const acc_t value = static_cast<acc_t>(v[k]);
    const acc_t bootstrap = term[k] ? acc_t(0) : g;
    const acc_t decay = d[k] ? acc_t(0) : gl;
    const acc_t delta = static_cast<acc_t>(r[k]) + bootstrap * static_cast<acc_t>(nv[k]) - value;
    run = delta + decay * run;
    adv[k] = static_cast<scalar_t>(run);
    tgt[k] = static_cast<scalar_t>(run + value);
  }
}

template <typename scalar_t>
__global__ void td_lambda_kernel(int64_t steps, int64_t n, int64_t st, int64_t sn, double gamma, double lmbda,
                                 const scalar_t* __restrict__ nv, const scalar_t* __restrict__ r,
                                 const bool* __restrict__ d, const bool* __restrict__ term,
                                 scalar_t* __restrict__ out) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (j >= n) return;
  const acc_t g = static_cast<acc_t>(gamma);
  const acc_t l = static_cast<acc_t>(lmbda);
  acc_t run = static_cast<acc_t>(nv[(steps - 1) * st + j * sn]);
  for (int64_t t = steps - 1; t >= 0; --t) {
    const int64_t k = t * st + j * sn;
    const acc_t bootstrap = term[k] ? acc_t(0) : g;
    const acc_t mix = d[k] ? acc_t(0) : l;
    run = static_cast<acc_t>(r[k]) +
          bootstrap * ((acc_t(1) - mix) * static_cast<acc_t>(nv[k]) + mix * run);
    out[k] = static_cast<scalar_t>(run);
  }
}

template <typename scalar_t>
__global__ void vtrace_kernel(int64_t steps, int64_t n, int64_t st, int64_t sn, double gamma, double rho_thresh,
                              double c_thresh, const scalar_t* __restrict__ lp,
                              const scalar_t* __restrict__ lm, const scalar_t* __restrict__ v,
                              const scalar_t* __restrict__ nv, const scalar_t* __restrict__ r,
                              const bool* __restrict__ d, const bool* __restrict__ term,
                              scalar_t* __restrict__ adv, scalar_t* __restrict__ tgt) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (j >= n) return;
  const acc_t g = static_cast<acc_t>(gamma);
  const acc_t rho_max = static_cast<acc_t>(rho_thresh);
  const acc_t c_max = static_cast<acc_t>(c_thresh);
  acc_t run = 0;
  for (int64_t t = steps - 1; t >= 0; --t) {
    const int64_t k = t * st + j * sn;
    const acc_t ratio = exp(static_cast<acc_t>(lp[k]) - static_cast<acc_t>(lm[k]));
    const acc_t rho = nan_min(ratio, rho_max);
    const acc_t c = nan_min(ratio, c_max);
    const acc_t not_done = d[k] ? acc_t(0) : acc_t(1);
    const acc_t bootstrap = term[k] ? acc_t(0) : g;
    const acc_t value = static_cast<acc_t>(v[k]);
    const acc_t next = static_cast<acc_t>(nv[k]);
    const acc_t rew = static_cast<acc_t>(r[k]);
    adv[k] = static_cast<scalar_t>(rho * (rew + bootstrap * (next + run * not_done) - value));
    run = rho * (rew + bootstrap * next - value) + g * c * not_done * run;
    tgt[k] = static_cast<scalar_t>(value + run);
  }
}

std::tuple<at::Tensor, at::Tensor> gae_cuda(double gamma, double lmbda,
                                            const at::Tensor& state_value,
                                            const at::Tensor& next_state_value,
                                            const at::Tensor& reward, const at::Tensor& done,
                                            const at::Tensor& terminated) {
  const char* op = "generalized_advantage_estimate";
  check_value_layout(op,
                     {{"state_value", &state_value},
                      {"next_state_value", &next_state_value},
                      {"reward", &reward}},
                     {{"done", &done}, {"terminated", &terminated}});
  const c10::cuda::CUDAGuard guard(reward.device());
  const auto r = dense_layout(reward);
  const auto v = strided_like(state_value, r);
  const auto nv = strided_like(next_state_value, r);
  const auto d = strided_like(done, r);
  const auto term = strided_like(terminated, r);
  auto advantage = at::empty_like(r);
  auto target = at::empty_like(r);
  const int64_t steps = r.size(0);
  const int64_t n = r.size(1);
  if (steps == 0 || n == 0) return {advantage, target};
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, r.scalar_type(), "rl_core_value_op", [&] {
    gae_kernel<scalar_t><<<blocks_for(n), kThreads, 0, stream>>>(
        steps, n, r.stride(0), r.stride(1), gamma, lmbda, v.const_data_ptr<scalar_t>(), nv.const_data_ptr<scalar_t>(),
        r.const_data_ptr<scalar_t>(), d.const_data_ptr<bool>(), term.const_data_ptr<bool>(),
        advantage.mutable_data_ptr<scalar_t>(), target.mutable_data_ptr<scalar_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return {advantage, target};
}

at::Tensor td_lambda_cuda(double gamma, double lmbda, const at::Tensor& next_state_value,
                          const at::Tensor& reward, const at::Tensor& done,
                          const at::Tensor& terminated) {
  const char* op = "td_lambda_return_estimate";
  check_value_layout(op, {{"next_state_value", &next_state_value}, {"reward", &reward}},
                     {{"done", &done}, {"terminated", &terminated}});
  const c10::cuda::CUDAGuard guard(reward.device());
  const auto r = dense_layout(reward);
  const auto nv = strided_like(next_state_value, r);
  const auto d = strided_like(done, r);
  const auto term = strided_like(terminated, r);
  auto target = at::empty_like(r);
  const int64_t steps = r.size(0);
  const int64_t n = r.size(1);
  if (steps == 0 || n == 0) return target;
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, r.scalar_type(), "rl_core_value_op", [&] {
    td_lambda_kernel<scalar_t><<<blocks_for(n), kThreads, 0, stream>>>(
        steps, n, r.stride(0), r.stride(1), gamma, lmbda, nv.const_data_ptr<scalar_t>(), r.const_data_ptr<scalar_t>(),
        d.const_data_ptr<bool>(), term.const_data_ptr<bool>(),
        target.mutable_data_ptr<scalar_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return target;
}

std::tuple<at::Tensor, at::Tensor> vtrace_cuda(
    double gamma, double rho_thresh, double c_thresh, const at::Tensor& log_pi,
    const at::Tensor& log_mu, const at::Tensor& state_value, const at::Tensor& next_state_value,
    const at::Tensor& reward, const at::Tensor& done, const at::Tensor& terminated) {
  const char* op = "vtrace_advantage_estimate";
  check_value_layout(op,
                     {{"log_pi", &log_pi},
                      {"log_mu", &log_mu},
                      {"state_value", &state_value},
                      {"next_state_value", &next_state_value},
                      {"reward", &reward}},
                     {{"done", &done}, {"terminated", &terminated}});
  const c10::cuda::CUDAGuard guard(reward.device());
  const auto r = dense_layout(reward);
  const auto lp = strided_like(log_pi, r);
  const auto lm = strided_like(log_mu, r);
  const auto v = strided_like(state_value, r);
  const auto nv = strided_like(next_state_value, r);
  const auto d = strided_like(done, r);
  const auto term = strided_like(terminated, r);
  auto advantage = at::empty_like(r);
  auto target = at::empty_like(r);
  const int64_t steps = r.size(0);
  const int64_t n = r.size(1);
  if (steps == 0 || n == 0) return {advantage, target};
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, r.scalar_type(), "rl_core_value_op", [&] {
    vtrace_kernel<scalar_t><<<blocks_for(n), kThreads, 0, stream>>>(
        steps, n, r.stride(0), r.stride(1), gamma, rho_thresh, c_thresh, lp.const_data_ptr<scalar_t>(),
        lm.const_data_ptr<scalar_t>(), v.const_data_ptr<scalar_t>(),
        nv.const_data_ptr<scalar_t>(), r.const_data_ptr<scalar_t>(), d.const_data_ptr<bool>(),
        term.const_data_ptr<bool>(), advantage.mutable_data_ptr<scalar_t>(),
        target.mutable_data_ptr<scalar_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return {advantage, target};
}

// One block. Leaf k is written when no later position repeats it (last write wins); then
// the ancestors, level by level: parents shared by several leaves get the same value from
// each thread, and __syncthreads makes each level visible before the next is read.
template <typename scalar_t, bool kIsSum>
__global__ void tree_update_kernel(scalar_t* tree, const int64_t* __restrict__ index,
                                   const scalar_t* __restrict__ value, int64_t count,
                                   int64_t capacity, bool distinct) {
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    const int64_t leaf = index[k];
    bool last = true;
    for (int64_t later = k + 1; later < count && last && !distinct; ++later) {
      last = index[later] != leaf;
    }
    if (last) tree[capacity + leaf] = value[k];
  }
  __syncthreads();
  for (int64_t shift = 1; (capacity >> shift) >= 1; ++shift) {
    for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
      const int64_t node = (capacity + index[k]) >> shift;
      const scalar_t a = tree[2 * node];
      const scalar_t b = tree[2 * node + 1];
      if constexpr (kIsSum) {
        tree[node] = a + b;
      } else {
        tree[node] = nan_min(a, b);
      }
    }
    __syncthreads();
  }
}

template <bool kIsSum>
void tree_update_cuda(const char* op, at::Tensor& tree, const at::Tensor& index,
                      const at::Tensor& value) {
  const int64_t capacity = check_tree_layout(op, tree, &index, value);
  const int64_t count = index.numel();
  if (count == 0) return;
  const c10::cuda::CUDAGuard guard(tree.device());
  const auto idx = index.contiguous();
  // The range check needs the values on the host: one device sync.
  const auto bounds = at::stack({idx.min(), idx.max()}).cpu();
  const int64_t* pb = bounds.const_data_ptr<int64_t>();
  check_leaf_range(op, pb[0], pb[1], capacity);
  auto leaves = idx;
  auto val = value.contiguous();
  const bool distinct = count > kPairwiseDedupMax;
  if (distinct) {
    // Many writes: keep the last position of each leaf with a stable sort instead of the
    // kernel's pairwise scan.
    const auto [sorted, order] = at::sort(idx, /*stable=*/true, /*dim=*/0, /*descending=*/false);
    auto last = at::ones_like(sorted, sorted.options().dtype(at::kBool));
    last.narrow(0, 0, count - 1).copy_(sorted.narrow(0, 0, count - 1) != sorted.narrow(0, 1, count - 1));
    leaves = sorted.masked_select(last);
    val = val.index_select(0, order.masked_select(last));
  }
  at::Tensor work = tree.is_contiguous() ? tree : tree.contiguous();
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, tree.scalar_type(), "rl_core_tree_update_", [&] {
    tree_update_kernel<scalar_t, kIsSum><<<1, 1024, 0, stream>>>(
        work.mutable_data_ptr<scalar_t>(), leaves.const_data_ptr<int64_t>(),
        val.const_data_ptr<scalar_t>(), leaves.numel(), capacity, distinct);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  if (!work.is_same(tree)) tree.copy_(work);
}

void sum_tree_update_cuda(at::Tensor& tree, const at::Tensor& index, const at::Tensor& value) {
  tree_update_cuda<true>("sum_tree_update_", tree, index, value);
}

void min_tree_update_cuda(at::Tensor& tree, const at::Tensor& index, const at::Tensor& value) {
  tree_update_cuda<false>("min_tree_update_", tree, index, value);
}

template <typename scalar_t>
__global__ void find_prefixsum_kernel(const scalar_t* __restrict__ tree,
                                      const scalar_t* __restrict__ query, int64_t* out,
                                      int64_t count, int64_t capacity) {
  const int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (k >= count) return;
  scalar_t remaining = query[k];
  if (remaining < scalar_t(0)) remaining = scalar_t(0);
  int64_t node = 1;
  while (node < capacity) {
    const int64_t left = 2 * node;
    const scalar_t left_sum = tree[left];
    const bool go_right = remaining >= left_sum && tree[left + 1] > scalar_t(0);
    if (go_right) remaining = remaining - left_sum;
    node = left + (go_right ? 1 : 0);
  }
  out[k] = node - capacity;
}

at::Tensor sum_tree_find_prefixsum_cuda(const at::Tensor& tree, const at::Tensor& value) {
  const char* op = "sum_tree_find_prefixsum";
  const int64_t capacity = check_tree_layout(op, tree, nullptr, value);
  auto leaf = at::empty(value.sizes(), value.options().dtype(at::kLong));
  const int64_t count = value.numel();
  if (count == 0) return leaf;
  const c10::cuda::CUDAGuard guard(tree.device());
  const auto t = tree.contiguous();
  const auto q = value.contiguous();
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, tree.scalar_type(), "sum_tree_find_prefixsum", [&] {
    find_prefixsum_kernel<scalar_t><<<blocks_for(count), kThreads, 0, stream>>>(
        t.const_data_ptr<scalar_t>(), q.const_data_ptr<scalar_t>(),
        leaf.mutable_data_ptr<int64_t>(), count, capacity);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return leaf;
}

}  // namespace

TORCH_LIBRARY_IMPL(rl_core, CUDA, m) {
  m.impl("generalized_advantage_estimate", &gae_cuda);
  m.impl("td_lambda_return_estimate", &td_lambda_cuda);
  m.impl("vtrace_advantage_estimate", &vtrace_cuda);
  m.impl("sum_tree_update_", &sum_tree_update_cuda);
  m.impl("min_tree_update_", &min_tree_update_cuda);
  m.impl("sum_tree_find_prefixsum", &sum_tree_find_prefixsum_cuda);
}

}  // namespace rl_kernels
