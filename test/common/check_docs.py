#!/usr/bin/env python3
"""check_docs.py -- the documentation matches the folders it describes.

    check_docs.py [SRCDIR]     exit 0: all holds; 1: each problem named

- README.md is the user's page: at most 250 lines (the details live in docs/usage.md).
- Every relative link of README.md, docs/*.md and the folders' README.md files reaches a file
  or folder that exists, and its #anchor a heading of that page.
- Every repository path those pages write in backquotes (`src/plan.h`, `bench/netem/`, ...)
  exists, so a file moved or removed cannot leave a page pointing at nothing.
"""
import os
import re
import sys

README_MAX_LINES = 250
TOP_FOLDERS = ("src", "ompi", "tools", "bench", "test", "scripts", "docs", "packaging", "debian")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\s]+)`")
PATH = re.compile(r"^(?:%s)/[A-Za-z0-9_./+-]*$" % "|".join(TOP_FOLDERS))


def slug(heading):
    """A heading's anchor, as GitHub makes it."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^a-z0-9 -]", "", text).replace(" ", "-")


def anchors(path):
    with open(path, encoding="utf-8") as f:
        return {slug(line.lstrip("#")) for line in f if line.startswith("#")}


def pages(srcdir):
    found = ["README.md"]
    found += ["docs/" + n for n in sorted(os.listdir(os.path.join(srcdir, "docs"))) if n.endswith(".md")]
    for top in ("test", "bench", "tools", "packaging"):
        for root, _, files in os.walk(os.path.join(srcdir, top)):
            found += [os.path.relpath(os.path.join(root, "README.md"), srcdir)] if "README.md" in files else []
    return found


def link_problems(srcdir, page, text):
    here = os.path.dirname(os.path.join(srcdir, page))
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target):
            continue  # http:, mailto:
        file, _, anchor = target.partition("#")
        path = os.path.normpath(os.path.join(here, file)) if file else os.path.join(srcdir, page)
        if not os.path.exists(path):
            yield f"{page}: link {target}: {os.path.relpath(path, srcdir)} does not exist"
        elif anchor and path.endswith(".md") and anchor not in anchors(path):
            yield f"{page}: link {target}: no heading #{anchor} in {os.path.relpath(path, srcdir)}"


def path_problems(srcdir, page, text):
    for token in CODE.findall(text):
        token = token.rstrip(".,:;")
        if PATH.match(token) and not os.path.exists(os.path.join(srcdir, token)):
            yield f"{page}: `{token}` does not exist"


def main(argv):
    srcdir = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    problems = []
    with open(os.path.join(srcdir, "README.md"), encoding="utf-8") as f:
        lines = f.read().count("\n")
    if lines > README_MAX_LINES:
        problems.append(f"README.md has {lines} lines, over {README_MAX_LINES}: move details to docs/usage.md")
    checked = pages(srcdir)
    for page in checked:
        with open(os.path.join(srcdir, page), encoding="utf-8") as f:
            text = f.read()
        problems += list(link_problems(srcdir, page, text)) + list(path_problems(srcdir, page, text))
    if problems:
        print("check_docs: FAIL")
        print("\n".join("  - " + p for p in problems))
        return 1
    print(f"check_docs: PASS (README.md {lines} lines; links and paths of {len(checked)} pages)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
