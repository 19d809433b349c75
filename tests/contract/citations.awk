# Finds citations in the source tree that a reader cannot follow inside the
# repository. Run by check_citations.sh, which passes two lists of paths
# relative to the repository root:
#   existing  every file of the tree (what a citation may point at)
#   scan      the source and documentation files to check
# Prints "file:line: problem" for each bad citation and exits 1 if there is one.
#
# Rules:
#   outside file   a path ending in .md that is not a file of the repository
#                  (relative to the citing file, to the root, or, for a bare
#                  name, to docs/), and any ../shared/ path except the
#                  dataset location ../shared/data; a path that starts with a
#                  shell variable ($OUT/report.md, ${dir}/x.md) is a file written
#                  at run time, not a citation
#   section        "X.md section N", "X.md sections N to M", "sections N and M",
#                  "sections N, M", "X.md` section N.M", "[t](X.md) section N":
#                  X.md must have a heading numbered N ("## N. Title",
#                  "### N.M Title"); a citation may wrap onto the next line
#   heading        X.md "Heading text": X.md must have that heading
#   contract       bare "section N" inside docs/contract.md cites the contract
#                  itself, unless it follows a standard's name (OCP, IEEE, Posit)
#   links          markdown links [t](path#anchor) outside code: the path must
#                  exist and the anchor must be a heading of the target
BEGIN {
  MDTOK = "[A-Za-z0-9_./-]*[A-Za-z0-9_]\\.md"
  NUMS = "[0-9]+(\\.[0-9]+)*([ ]*(,|and|to|-)[ ]*[0-9]+(\\.[0-9]+)*)*"
  SECREF = "[Ss]ections?[ ]+" NUMS
  CITE = MDTOK "[]`)]*[ ]+" SECREF
  QUOTED = MDTOK "`?,?[ ]+\"[^\"]+\""
  LINK = "[]][(][^) ]+[)]"

  while ((getline path < existing) > 0) add_existing(path)
  close(existing)
  while ((getline path < scan) > 0) if (path ~ /\.md$/) index_headings(path)
  close(scan)
  while ((getline path < scan) > 0) check_file(path)
  close(scan)
  if (errors > 0) {
    printf "%d citation(s) point outside the repository or at sections that do not exist\n", errors
    exit 1
  }
}

function report(file, line, message) {
  printf "%s:%d: %s\n", file, line, message
  errors++
}

# A file and every folder above it exist.
function add_existing(path,    n, parts, i, dir) {
  exists[path] = 1
  n = split(path, parts, "/")
  dir = ""
  for (i = 1; i < n; i++) {
    dir = dir (i > 1 ? "/" : "") parts[i]
    exists[dir] = 1
  }
}

function dirname(path) {
  if (path !~ /\//) return "."
  sub(/\/[^\/]*$/, "", path)
  return path
}

# "a/./b/../c" -> "a/c"; "" when the path leaves the repository.
function normalize(path,    n, parts, i, out, depth, stack) {
  if (path ~ /^\//) return ""
  n = split(path, parts, "/")
  depth = 0
  for (i = 1; i <= n; i++) {
    if (parts[i] == "" || parts[i] == ".") continue
    if (parts[i] == "..") {
      if (depth == 0) return ""
      depth--
      continue
    }
    stack[++depth] = parts[i]
  }
  out = ""
  for (i = 1; i <= depth; i++) out = out (i > 1 ? "/" : "") stack[i]
  return out
}

# The repository file a cited path names, or "".
function resolve(token, file,    p) {
  p = normalize(dirname(file) "/" token)
  if (p != "" && (p in exists)) return p
  p = normalize(token)
  if (p != "" && (p in exists)) return p
  if (token !~ /\//) {
    p = "docs/" token
    if (p in exists) return p
  }
  return ""
}

function heading_slug(text) {
  text = tolower(text)
  gsub(/[^a-z0-9 _-]/, "", text)
  gsub(/ /, "-", text)
  return text
}

function is_fence(line) { return line ~ /^[ \t]*(```|~~~)/ }

# Headings of a markdown file: their text, GitHub anchors and section numbers.
function index_headings(file,    line, fenced, text, number) {
  fenced = 0
  while ((getline line < file) > 0) {
    if (is_fence(line)) { fenced = !fenced; continue }
    if (fenced || line !~ /^#+[ \t]/) continue
    text = line
    sub(/^#+[ \t]+/, "", text)
    sub(/[ \t#]*$/, "", text)
    heading[file, text] = 1
    anchor[file, heading_slug(text)] = 1
    if (match(text, /^[0-9]+(\.[0-9]+)*\.?[ \t]/)) {
      number = substr(text, 1, RLENGTH - 1)
      sub(/\.$/, "", number)
      section[file, number] = 1
      text = substr(text, RLENGTH + 1)
      sub(/^[ \t]+/, "", text)
      heading[file, text] = 1
    }
  }
  close(file)
}

# The next line without its comment leader, to join a citation that wraps.
function continuation(line) {
  sub(/^[ \t]*(\/\/+|#+|\*+|--)?[ \t]*/, "", line)
  return line
}

function check_file(file,    n, L, line, i, fenced) {
  n = 0
  while ((getline line < file) > 0) L[++n] = line
  close(file)
  fenced = 0
  for (i = 1; i <= n; i++) {
    check_paths(file, i, L[i])
    check_sections(file, i, L[i], L[i] " " (i < n ? continuation(L[i + 1]) : ""))
    if (file !~ /\.md$/) continue
    if (is_fence(L[i])) { fenced = !fenced; continue }
    if (!fenced) check_links(file, i, L[i])
  }
}

# Outside-file rule: .md paths and ../shared/ paths.
function check_paths(file, i, line,    s, token, before, after) {
  s = line
  while (match(s, MDTOK)) {
    token = substr(s, RSTART, RLENGTH)
    before = substr(s, 1, RSTART - 1)
    after = substr(s, RSTART + RLENGTH, 1)
    s = substr(s, RSTART + RLENGTH)
    if (after ~ /[A-Za-z0-9_]/ || before ~ /:$/) continue  # longer name, or a URL
    if (before ~ /(\$|\})$/) continue  # $OUT/x.md, ${dir}/x.md: a file a script writes at run time
    if (resolve(token, file) == "")
      report(file, i, "cites " token ", which is not a file of the repository")
  }
  s = line
  while (match(s, /\.\.\/shared\/[A-Za-z0-9_.\/-]*/)) {
    token = substr(s, RSTART, RLENGTH)
    s = substr(s, RSTART + RLENGTH)
    if (token ~ /^\.\.\/shared\/data(\/|$)/ || token ~ /\.md$/) continue  # datasets; .md reported above
    report(file, i, "cites " token ", which is outside the repository")
  }
}

# The matches of `pattern` in `joined` (line i joined with its continuation) that start on
# line i itself, into found[1..n], each with the text before it in before[k]; returns n.
function matches_on_line(line, joined, pattern, found, before,    s, offset, n) {
  split("", found); split("", before)
  s = joined; offset = 0; n = 0
  while (match(s, pattern) && offset + RSTART <= length(line)) {
    found[++n] = substr(s, RSTART, RLENGTH)
    before[n] = substr(s, 1, RSTART - 1)
    offset += RSTART + RLENGTH - 1; s = substr(s, RSTART + RLENGTH)
  }
  return n
}

# Section, heading and (in the contract) bare section citations that start on line i.
function check_sections(file, i, line, joined,    n, k, m, found, before, token, target, quoted) {
  n = matches_on_line(line, joined, CITE, found, before)
  for (k = 1; k <= n; k++) {
    m = found[k]
    match(m, MDTOK)
    token = substr(m, RSTART, RLENGTH)
    target = resolve(token, file)
    if (target != "") check_numbers(file, i, token, target, m)
  }
  n = matches_on_line(line, joined, QUOTED, found, before)
  for (k = 1; k <= n; k++) {
    m = found[k]
    match(m, MDTOK)
    token = substr(m, RSTART, RLENGTH)
    target = resolve(token, file)
    quoted = m
    sub(/^[^"]*"/, "", quoted); sub(/"$/, "", quoted)
    if (target != "" && !((target, quoted) in heading))
      report(file, i, "cites heading \"" quoted "\" of " target ", which has no such heading")
  }
  if (file != "docs/contract.md") return
  n = matches_on_line(line, joined, SECREF, found, before)
  for (k = 1; k <= n; k++) {
    if (before[k] ~ /\.md[]`)]*[ ]+$/) continue  # a citation of another file, checked above
    if (substr(before[k], length(before[k]) - 24) ~ /OCP|IEEE|Posit/) continue  # an outside standard's section
    check_numbers(file, i, "docs/contract.md", "docs/contract.md", found[k])
  }
}

# Every number of "section(s) N[, M][ and M][ to M]" must be a heading of target.
function check_numbers(file, i, token, target, citation,    list, n, parts, k, lo, hi, v, bounds) {
  list = citation
  sub(/^.*[Ss]ections?[ ]+/, "", list)
  gsub(/[ ]*(,|and)[ ]*/, " ", list)
  gsub(/[ ]*(to|-)[ ]*/, "~", list)
  n = split(list, parts, " ")
  for (k = 1; k <= n; k++) {
    if (parts[k] ~ /^[0-9]+~[0-9]+$/) {  # a range of whole sections: every one of them
      split(parts[k], bounds, "~")
      lo = bounds[1] + 0; hi = bounds[2] + 0
      for (v = lo; v <= hi; v++) check_number(file, i, token, target, v "")
    } else {
      split(parts[k], bounds, "~")
      check_number(file, i, token, target, bounds[1])
      if (bounds[2] != "") check_number(file, i, token, target, bounds[2])
    }
  }
}

function check_number(file, i, token, target, number) {
  if (!((target, number) in section))
    report(file, i, "cites " token " section " number ", but " target " has no section " number)
}

# Markdown links: the target exists, and so does its anchor.
function check_links(file, i, line,    s, target, path, hash, resolved) {
  s = line
  gsub(/`[^`]*`/, "", s)  # code spans are not links
  while (match(s, LINK)) {
    target = substr(s, RSTART + 2, RLENGTH - 3)
    s = substr(s, RSTART + RLENGTH)
    if (target ~ /^[a-z]+:/) continue  # http:, https:, mailto:
    path = target; hash = ""
    if (index(target, "#") > 0) {
      path = substr(target, 1, index(target, "#") - 1)
      hash = substr(target, index(target, "#") + 1)
    }
    resolved = path == "" ? file : normalize(dirname(file) "/" path)
    if (resolved == "" || !(resolved in exists)) {
      if (path !~ /\.md$/ || resolve(path, file) != "")  # else reported as an outside file already
        report(file, i, "links to " path ", which does not exist")
      continue
    }
    if (hash != "" && resolved ~ /\.md$/ && !((resolved, hash) in anchor))
      report(file, i, "links to " resolved "#" hash ", which is not a heading there")
  }
}
