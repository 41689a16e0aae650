# Writes OUT: a C++ file defining `const std::vector<std::pair<std::string, std::string>>&
# NS::FN()` that returns (file name, text) for every file in SRC_DIR matching PATTERN, so that
# hand-written sources (RTL blocks, run-time kernels) travel inside the triad binary.
# Arguments (-D): SRC_DIR, PATTERN, OUT, NS, FN, INCLUDE (header declaring FN), ORIGIN (for the
# banner comment).
file(GLOB _files "${SRC_DIR}/${PATTERN}")
list(SORT _files)
set(_body "")
foreach(_f ${_files})
  file(READ "${_f}" _text)
  get_filename_component(_n "${_f}" NAME)
  string(APPEND _body "      {\"${_n}\", R\"TRIADEMBED(${_text})TRIADEMBED\"},\n")
endforeach()
file(WRITE "${OUT}.tmp" "// generated from ${ORIGIN} by cmake/embed.cmake, do not edit\n#include \"${INCLUDE}\"\nnamespace ${NS} {\nconst std::vector<std::pair<std::string, std::string>>& ${FN}() {\n  static const std::vector<std::pair<std::string, std::string>> files = {\n${_body}  };\n  return files;\n}\n} // namespace ${NS}\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
