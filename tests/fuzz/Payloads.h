// String payloads for the fuzzers (issue 25): model strings that try to break out of every
// language Triad generates and, where one succeeds, create the marker file. The mutator
// (OnnxMutator.cpp) puts them into names, doc strings and the producer; the harness checks the
// marker after every execution ("code execution") and the generated text for a line that begins
// with one of a payload's lines ("code injection": it left its comment or literal).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace triad::fuzz {

/// The file a payload creates when it runs: /tmp/triad-fuzz-code-execution, the same in every
/// process and environment, so that a saved input replays to the same finding.
const std::string& markerPath();

/// The payloads, with the marker path filled in.
const std::vector<std::string>& stringPayloads();

/// The lines of the payloads that no generator writes itself: a generated line that begins with
/// one (after leading blanks) came from a model string that escaped.
const std::vector<std::string>& payloadLines();

/// The first line of `text` that begins with a payload line, or empty.
std::string injectedLine(std::string_view text);

/// Finding "code execution" when the marker exists (it is removed first, so later inputs are
/// judged on their own).
void checkMarker(std::string_view where);

} // namespace triad::fuzz
