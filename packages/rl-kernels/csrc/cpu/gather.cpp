// CPU kernel of rl_core's gather_rows: the rows `index` of several tables in one pass, what
// a replay buffer reads for a batch. The rows of a large storage miss the cache; reading
// row k of every table while the rows of k + kAhead are prefetched keeps many misses in
// flight, where one index_select per table waits on them table after table. The values are
// index_select's (rows copied byte for byte); a table whose rows are not one contiguous
// block each (a strided view, a conjugate or negative view, another layout) takes
// index_select itself.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "../checks.h"

namespace rl_kernels {
namespace {

constexpr int64_t kAhead = 16;  // rows prefetched ahead of the copy

bool rows_are_blocks(const at::Tensor& table) {
  return table.layout() == at::kStrided && table.is_contiguous() && !table.is_conj() &&
         !table.is_neg() && table.device().is_cpu();
}

std::vector<at::Tensor> gather_rows_cpu(at::TensorList tables, const at::Tensor& index) {
  constexpr const char* op = "gather_rows";
  TORCH_CHECK(index.dim() == 1 && index.scalar_type() == at::kLong, "rl_core::", op,
              ": expected index 1-D int64, got ", py_dtype(index.scalar_type()), " of shape ",
              py_shape(index.sizes()), ".");
  for (size_t j = 0; j < tables.size(); ++j) {
    TORCH_CHECK(tables[j].dim() >= 1 && tables[j].device() == index.device(), "rl_core::", op,
                ": expected tables[", j, "] with at least 1 dim on ", index.device().str(),
                " like index, got shape ", py_shape(tables[j].sizes()), " on ",
                tables[j].device().str(), ".");
  }
  const auto idx = index.contiguous();
  const int64_t count = idx.numel();
  const int64_t* pi = idx.const_data_ptr<int64_t>();
  int64_t low = 0, high = -1;
  if (count) {
    const auto bounds = std::minmax_element(pi, pi + count);
    low = *bounds.first;
    high = *bounds.second;
  }
  std::vector<at::Tensor> out;
  out.reserve(tables.size());
  std::vector<const char*> src;
  std::vector<char*> dst;
  std::vector<int64_t> row_bytes;
  for (size_t j = 0; j < tables.size(); ++j) {
    const at::Tensor& table = tables[j];
    if (count) {
      TORCH_CHECK_INDEX(low >= 0 && high < table.size(0), "rl_core::", op,
                        ": expected indices in [0, ", table.size(0), ") for tables[", j,
                        "], got values in [", low, ", ", high, "].");
    }
    if (!rows_are_blocks(table)) {
      out.push_back(table.index_select(0, idx));
      continue;
    }
    auto sizes = table.sizes().vec();
    sizes[0] = count;
    out.push_back(at::empty(sizes, table.options()));
    const int64_t bytes = table.size(0) ? table.numel() / table.size(0) * table.element_size() : 0;
    if (bytes == 0) continue;  // rows of no elements: nothing to copy
    src.push_back(static_cast<const char*>(table.const_data_ptr()));
    dst.push_back(static_cast<char*>(out.back().mutable_data_ptr()));
    row_bytes.push_back(bytes);
  }
  const size_t blocks = src.size();
  auto prefetch = [&](int64_t k) {
    for (size_t j = 0; j < blocks; ++j) {
      const char* first = src[j] + pi[k] * row_bytes[j];
      __builtin_prefetch(first);
      __builtin_prefetch(first + row_bytes[j] - 1);  // a row may straddle two cache lines
    }
  };
  for (int64_t k = 0; k < std::min(count, kAhead); ++k) prefetch(k);
  for (int64_t k = 0; k < count; ++k) {
    if (k + kAhead < count) prefetch(k + kAhead);
    for (size_t j = 0; j < blocks; ++j) {
      std::memcpy(dst[j] + k * row_bytes[j], src[j] + pi[k] * row_bytes[j],
                  static_cast<size_t>(row_bytes[j]));
    }
  }
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(rl_core, CPU, m) { m.impl("gather_rows", &gather_rows_cpu); }

}  // namespace rl_kernels
