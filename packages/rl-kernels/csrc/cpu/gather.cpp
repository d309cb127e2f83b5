// CPU kernel of rl_core's gather_rows: the rows `index` of several tables, what a replay
// buffer reads for a batch. The rows of a large storage miss the cache; copying the rows
// of the first table while the rows of every table for k + kAhead are prefetched keeps
// many misses in flight, where one index_select per table waits on them table after table.
// The other tables are then copied one after the other from the cache, each in a loop of
// its own with one row size (going across the tables row by row was about 10 us slower on
// rl-buffers' packed layout: CHANGELOG). The values are index_select's (rows copied byte
// for byte). A table is copied here when each of its rows is one contiguous block, at any
// distance from the next row: a contiguous table, or a column slice of a wider one (a
// storage that keeps the entries of an item side by side, so that one item's rows share
// cache lines). A table whose rows are not blocks (strided within a row, a conjugate or
// negative view, another layout) takes index_select itself.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "../checks.h"

namespace rl_kernels {
namespace {

constexpr int64_t kAhead = 16;  // rows prefetched ahead of the copy

// Copies n bytes from src to dst (not overlapping) with fixed-size moves the compiler
// inlines: a storage row is a few to a few hundred bytes, where a call to memcpy per row
// costs about as much as the copy. The last move of each size may overlap the one before.
inline void copy_row(char* dst, const char* src, int64_t n) {
  if (n >= 16) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) std::memcpy(dst + i, src + i, 16);
    if (i < n) std::memcpy(dst + n - 16, src + n - 16, 16);
  } else if (n >= 8) {
    std::memcpy(dst, src, 8);
    std::memcpy(dst + n - 8, src + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(dst, src, 4);
    std::memcpy(dst + n - 4, src + n - 4, 4);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
  }
}

// Whether every row of `table` (dim 0) is one contiguous block of memory: the dims after the
// first are laid out as in a contiguous tensor (dims of size 1 have any stride), the rows
// start stride(0) elements apart, stride(0) >= 0.
bool rows_are_blocks(const at::Tensor& table) {
  if (table.layout() != at::kStrided || table.is_conj() || table.is_neg() ||
      !table.device().is_cpu() || table.stride(0) < 0) {
    return false;
  }
  int64_t expected = 1;
  for (int64_t d = table.dim() - 1; d >= 1; --d) {
    if (table.size(d) == 1) continue;
    if (table.stride(d) != expected) return false;
    expected *= table.size(d);
  }
  return true;
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
  std::vector<int64_t> src_stride;  // bytes from one row to the next
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
    src_stride.push_back(table.stride(0) * table.element_size());
  }
  const size_t blocks = src.size();
  auto prefetch = [&](int64_t k) {
    for (size_t j = 0; j < blocks; ++j) {
      const char* first = src[j] + pi[k] * src_stride[j];
      __builtin_prefetch(first);
      __builtin_prefetch(first + row_bytes[j] - 1);  // a row may straddle two cache lines
    }
  };
  if (blocks == 0) return out;
  for (int64_t k = 0; k < std::min(count, kAhead); ++k) prefetch(k);
  for (size_t j = 0; j < blocks; ++j) {
    char* d = dst[j];
    const char* s = src[j];
    const int64_t n = row_bytes[j], stride = src_stride[j];
    const bool first = j == 0;  // the pass that prefetches every table's rows
    for (int64_t k = 0; k < count; ++k) {
      if (first && k + kAhead < count) prefetch(k + kAhead);
      copy_row(d + k * n, s + pi[k] * stride, n);
    }
  }
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(rl_core, CPU, m) { m.impl("gather_rows", &gather_rows_cpu); }

}  // namespace rl_kernels
