// A small XML well-formedness checker for the report's inline SVG charts (the tests have no XML
// library): balanced tags, quoted and unique attributes, only the five predefined entities and
// character references, no '<' in attribute values, no raw '&'.
#pragma once

#include <cctype>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace triad::test {

/// Empty when `xml` is one well-formed element; else what is wrong and where.
inline std::string xmlProblem(std::string_view xml) {
  std::vector<std::string> stack;
  size_t i = 0, roots = 0;
  auto at = [&](std::string what) { return what + " at byte " + std::to_string(i); };
  auto nameChar = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':' ||
           c == '.';
  };
  auto checkEntities = [&](std::string_view text) -> std::string {
    for (size_t k = 0; k < text.size(); ++k) {
      if (text[k] == '<') return at("'<' in text or attribute");
      if (text[k] != '&') continue;
      size_t semi = text.find(';', k);
      if (semi == std::string_view::npos) return at("unterminated entity");
      std::string_view ent = text.substr(k + 1, semi - k - 1);
      static const std::set<std::string_view> named = {"lt", "gt", "amp", "quot", "apos"};
      bool ok = named.count(ent) > 0;
      if (!ok && ent.size() > 1 && ent[0] == '#') {
        ok = true;
        bool hex = ent[1] == 'x';
        for (size_t m = hex ? 2 : 1; m < ent.size(); ++m)
          ok &= hex ? std::isxdigit(static_cast<unsigned char>(ent[m])) != 0
                    : std::isdigit(static_cast<unsigned char>(ent[m])) != 0;
      }
      if (!ok) return at("unknown entity &" + std::string(ent) + ";");
    }
    return "";
  };
  while (i < xml.size()) {
    if (xml[i] != '<') {
      size_t next = xml.find('<', i);
      if (next == std::string_view::npos) next = xml.size();
      std::string_view text = xml.substr(i, next - i);
      if (stack.empty() && text.find_first_not_of(" \t\r\n") != std::string_view::npos)
        return at("text outside the root element");
      if (auto p = checkEntities(text); !p.empty()) return p;
      i = next;
      continue;
    }
    if (xml.substr(i, 4) == "<!--") {
      size_t end = xml.find("-->", i);
      if (end == std::string_view::npos) return at("unterminated comment");
      i = end + 3;
      continue;
    }
    bool closing = i + 1 < xml.size() && xml[i + 1] == '/';
    size_t k = i + (closing ? 2 : 1);
    size_t nameStart = k;
    while (k < xml.size() && nameChar(xml[k]))
      ++k;
    std::string name(xml.substr(nameStart, k - nameStart));
    if (name.empty()) return at("tag without a name");
    if (closing) {
      while (k < xml.size() && std::isspace(static_cast<unsigned char>(xml[k])))
        ++k;
      if (k >= xml.size() || xml[k] != '>') return at("bad closing tag </" + name);
      if (stack.empty() || stack.back() != name)
        return at("</" + name + "> closes <" + (stack.empty() ? "" : stack.back()) + ">");
      stack.pop_back();
      i = k + 1;
      continue;
    }
    std::set<std::string> attrs;
    bool selfClosing = false;
    for (;;) {
      while (k < xml.size() && std::isspace(static_cast<unsigned char>(xml[k])))
        ++k;
      if (k >= xml.size()) return at("unterminated tag <" + name);
      if (xml[k] == '>') break;
      if (xml[k] == '/' && k + 1 < xml.size() && xml[k + 1] == '>') {
        selfClosing = true;
        ++k;
        break;
      }
      size_t a = k;
      while (k < xml.size() && nameChar(xml[k]))
        ++k;
      std::string attr(xml.substr(a, k - a));
      if (attr.empty()) return at("bad attribute in <" + name);
      if (!attrs.insert(attr).second) return at("duplicate attribute " + attr);
      if (k >= xml.size() || xml[k] != '=') return at("attribute " + attr + " without a value");
      ++k;
      if (k >= xml.size() || (xml[k] != '"' && xml[k] != '\''))
        return at("unquoted attribute " + attr);
      char q = xml[k];
      size_t end = xml.find(q, k + 1);
      if (end == std::string_view::npos) return at("unterminated attribute " + attr);
      if (auto p = checkEntities(xml.substr(k + 1, end - k - 1)); !p.empty()) return p;
      k = end + 1;
    }
    if (stack.empty()) ++roots;
    if (roots > 1) return at("more than one root element");
    if (!selfClosing) stack.push_back(name);
    i = k + 1;
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  if (roots != 1) return "no root element";
  return "";
}

/// The <svg>...</svg> elements of a page (not nested in one another).
inline std::vector<std::string> svgElements(const std::string& html) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = html.find("<svg", pos)) != std::string::npos) {
    size_t end = html.find("</svg>", pos);
    if (end == std::string::npos) {
      out.push_back(html.substr(pos));
      break;
    }
    out.push_back(html.substr(pos, end + 6 - pos));
    pos = end + 6;
  }
  return out;
}

} // namespace triad::test
