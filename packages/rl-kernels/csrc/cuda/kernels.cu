// CUDA kernels of rl_core's value ops (GAE, TD(lambda), V-trace): one thread per sequence
// (column of the [T, N] layout), scanning time backwards; reads of a time step are coalesced
// across threads when the sequences are the fast axis. Checks and formulas as in the CPU
// kernels. The tree kernels are in trees.cu.
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
  if (steps == 0) return;
  // correction is d[t + 1] and target v[t + 1] on entry to step t (the CPU kernel's carry):
  // d[T] = 0 and the bootstrap value next_state_value[T - 1] before the last step.
  acc_t correction = 0;
  acc_t target = static_cast<acc_t>(nv[(steps - 1) * st + j * sn]);
  for (int64_t t = steps - 1; t >= 0; --t) {
    const int64_t k = t * st + j * sn;
    const acc_t ratio = exp(static_cast<acc_t>(lp[k]) - static_cast<acc_t>(lm[k]));
    const acc_t rho = nan_min(ratio, rho_max);
    const acc_t c = nan_min(ratio, c_max);
    const bool done_here = d[k];
    const acc_t bootstrap = term[k] ? acc_t(0) : g;
    const acc_t value = static_cast<acc_t>(v[k]);
    const acc_t next = static_cast<acc_t>(nv[k]);
    const acc_t rew = static_cast<acc_t>(r[k]);
    const acc_t next_target = done_here ? next : target;
    adv[k] = static_cast<scalar_t>(rho * (rew + bootstrap * next_target - value));
    const acc_t trace = done_here ? acc_t(0) : g * c * correction;
    correction = rho * (rew + bootstrap * next - value) + trace;
    target = value + correction;
    tgt[k] = static_cast<scalar_t>(target);
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

}  // namespace

TORCH_LIBRARY_IMPL(rl_core, CUDA, m) {
  m.impl("generalized_advantage_estimate", &gae_cuda);
  m.impl("td_lambda_return_estimate", &td_lambda_cuda);
  m.impl("vtrace_advantage_estimate", &vtrace_cuda);
}

}  // namespace rl_kernels
