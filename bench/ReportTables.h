// The report's content as neutral sections of paragraphs and tables, built once from the JSON
// and printed by both renderers (Markdown: bench/Report.cpp, HTML: bench/ReportHtml.cpp), so the
// two always show the same numbers. Text here is raw (unescaped): each printer escapes it.
#pragma once

#include "bench/ReportUtil.h"

#include <string>
#include <vector>

namespace triad::bench::detail {

struct Cell {
  std::string text;
  std::string cls; // HTML class: "ok", "skipped", "failed", "why" ("" = none)
};

struct Table {
  std::vector<std::string> header;
  std::vector<bool> numeric; // per column: right-aligned
  std::vector<std::vector<Cell>> rows;
  void row(std::vector<Cell> cells) { rows.push_back(std::move(cells)); }
};

struct Block {
  enum Kind { Paragraph, TableBlock } kind = Paragraph;
  std::string text; // Paragraph
  Table table;      // TableBlock
};

struct Section {
  std::string id; // HTML anchor, and the key the HTML renderer hangs charts on
  std::string title;
  int level = 2; // 2: "##", 3: "###"
  std::vector<Block> blocks;
  std::string target; // per-layer subsections: the target shown
  void para(std::string t) { blocks.push_back({Block::Paragraph, std::move(t), {}}); }
  void table(Table t) { blocks.push_back({Block::TableBlock, {}, std::move(t)}); }
};

/// The run's title line ("digits_cnn on ci-1") and its sections, in order. Sections whose data
/// the report lacks are left out (a run without GPU results has no GPU section), except results,
/// which says so when empty.
std::string reportTitle(const Json& report);
std::vector<Section> buildSections(const Json& report);

/// How many layers per device the per-layer tables and charts show before "other".
inline constexpr size_t kTopLayers = 8;

} // namespace triad::bench::detail
