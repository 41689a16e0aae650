// Static memory planning shared by the code-generating targets: where every value a compiled
// model touches lives. Graph inputs and outputs stay in the caller's buffers, constants in the
// weights blob, and every intermediate that a fusion group materializes gets an offset in one
// arena per model, reused across values whose lifetimes do not overlap (greedy by size, best
// offset first). Reshape-like ops alias their input (no copy), and an elementwise chain may
// write over an operand that dies there (in place).
#pragma once

#include "ir/Fusion.h"

#include <cstdint>
#include <span>
#include <vector>

namespace triad::ir {

enum class Storage : uint8_t {
  None,     // never materialized (internal to a fusion group)
  Input,    // graph input `index`
  Output,   // graph output `index`
  Constant, // the constant value itself (the target places it in its weights)
  Arena,    // arena bytes [offset, offset + size)
};

struct Location {
  Storage storage = Storage::None;
  int index = -1;     // Input/Output index
  int64_t offset = 0; // Arena offset in bytes
  int owner = -1;     // Value::id of the value whose storage this is (itself, or a view's root)
};

struct MemoryPlanOptions {
  int64_t alignment = 64;
  bool inPlace = true; // elementwise chains may overwrite a dying same-sized operand
};

struct MemoryPlan {
  std::vector<Location> location; // by Value::id
  std::vector<bool> aliasStep;    // by group index: the group is a view (emits no code)
  int64_t arenaBytes = 0;         // peak: the arena's size
  int64_t unsharedBytes = 0;      // what one buffer per intermediate would take
  int inPlaceCount = 0;
  int aliasCount = 0;

  const Location& at(const Value* v) const { return location[size_t(v->id())]; }
};

/// Reshape, Flatten, Squeeze, Unsqueeze and Identity only reinterpret their input's shape.
bool isViewOp(OpKind k);

MemoryPlan planMemory(const Graph& g, std::span<const FusionGroup> groups,
                      const MemoryPlanOptions& opts = {});

} // namespace triad::ir
