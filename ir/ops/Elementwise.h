// Attributes of the elementwise ops (math, comparisons, logic, casts), shared by every target's
// lowering. Ops not listed here take no attributes (NoAttrs).
#pragma once

#include "ir/Attrs.h"

#include <string_view>

namespace triad::ir {

/// Mod: fmod=false is integer modulo with the sign of the divisor (Python `%`); fmod=true is C
/// fmod, the sign of the dividend (the only mode allowed for float inputs).
struct ModAttrs : AttrsOf<ModAttrs> {
  bool fmod = false;
  template <class F> void fields(F&& f) const { f("fmod", fmod); }
};

enum class ShiftDirection : uint8_t { Left, Right };
inline std::string_view toString(ShiftDirection d) {
  return d == ShiftDirection::Left ? "left" : "right";
}

/// BitShift (unsigned integers only): shifts by >= the bit width give 0.
struct BitShiftAttrs : AttrsOf<BitShiftAttrs> {
  ShiftDirection direction = ShiftDirection::Left;
  template <class F> void fields(F&& f) const { f("direction", direction); }
};

/// IsInf: which infinities count.
struct IsInfAttrs : AttrsOf<IsInfAttrs> {
  bool detectPositive = true;
  bool detectNegative = true;
  template <class F> void fields(F&& f) const {
    f("detectPositive", detectPositive);
    f("detectNegative", detectNegative);
  }
};

/// Cast: the destination element type. (CastLike takes it from its second input instead and
/// has no attributes; its output type carries the destination.)
struct CastAttrs : AttrsOf<CastAttrs> {
  DType to = DType::F32;
  template <class F> void fields(F&& f) const { f("to", dtypeName(to)); }
};

} // namespace triad::ir
