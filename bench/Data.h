// Inputs for `triad bench`: rows of a data file cut into batches (the last one padded by
// repeating its last row, the outputs trimmed back), and seeded random rows where no data is
// given. A row is one sample: the tensor without its first (batch) dimension.
#pragma once

#include "ir/Tensor.h"

#include <cstdint>

namespace triad::bench {

/// Rows of a [N, ...] tensor.
int64_t rowCount(const ir::Tensor& t);

/// `type` with its first dimension set to `rows`.
ir::TensorType withRows(ir::TensorType type, int64_t rows);

/// A batch of `batch` rows starting at `start`, taken cyclically from `data` when it runs out
/// (timing inputs) or by repeating its last row (`pad`: the tail of an accuracy pass).
ir::Tensor takeRows(const ir::Tensor& data, int64_t start, int64_t batch, bool pad);

/// `rows` seeded random rows of `type` (first dimension replaced): floats uniform in [0, 1),
/// integers 0 or 1, booleans. Row r depends only on (seed, input, r), so any batching of the
/// same rows gives the same values.
ir::Tensor randomRows(const ir::TensorType& type, int64_t start, int64_t rows, uint64_t seed,
                      int input);

/// Copies the first `rows` rows of `part` to rows [at, at + rows) of `acc`, which is allocated
/// with `total` rows (of part's row type) when it is still empty.
void putRows(ir::Tensor& acc, int64_t total, int64_t at, const ir::Tensor& part, int64_t rows);

} // namespace triad::bench
