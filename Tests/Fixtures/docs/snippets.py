#!/usr/bin/env python3
"""Turns the ```swift blocks of Markdown files into Swift files that compile, one file per Markdown file.

The convention (README.md and the DocC articles follow it):

- A ```swift block is compiled as statements in the body of
  `func snippetN(session: RealtimeSession, channel: RealtimeChannel) async throws`, so it may use
  `try`, `await`, and the two names `session` and `channel` without declaring them (a block that declares
  its own `session` shadows the parameter).
- `<!-- snippet: declarations -->` on the line before the fence compiles the block at file scope instead
  (types, functions, extensions). Declarations are shared by every block of the same Markdown file.
- `<!-- snippet: skip REASON -->` leaves the block out; the reason is required and printed.
- `import` lines in a statements block are moved to file scope.

Each generated file imports Foundation, Realtime and RealtimeTesting, and carries `#sourceLocation`
lines, so the compiler reports errors at the Markdown file's own line numbers.

Usage: snippets.py OUTPUT_DIR MARKDOWN...   (prints one line per Markdown file: `<swift file> <blocks>`)
"""
import os
import re
import sys

MARKER = re.compile(r"^\s*<!--\s*snippet:\s*(declarations|skip)\b(.*?)-->\s*$")
FENCE_OPEN = re.compile(r"^(\s*)(```+|~~~+)\s*swift\s*$")
IMPORT = re.compile(r"^import\s+\w+\s*$")


def blocks(path):
    """Yields (kind, first line number, lines, reason) per swift fence; kind: statements, declarations, skip."""
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    pending = None  # (kind, reason) from a marker on the previous non-blank line
    index = 0
    while index < len(lines):
        line = lines[index]
        marker = MARKER.match(line)
        if marker:
            pending = (marker.group(1), marker.group(2).strip())
            index += 1
            continue
        opening = FENCE_OPEN.match(line)
        if opening:
            indent, fence = opening.group(1), opening.group(2)
            body = []
            index += 1
            while index < len(lines) and not lines[index].strip().startswith(fence):
                text = lines[index]
                body.append(text[len(indent):] if text.startswith(indent) else text)
                index += 1
            if index >= len(lines):
                sys.exit(f"{path}: a ```swift fence is never closed")
            kind, reason = pending or ("statements", "")
            if kind == "skip" and not reason:
                sys.exit(f"{path}:{index + 1}: '<!-- snippet: skip -->' needs a reason")
            yield kind, index - len(body) + 1, body, reason
            pending = None
        elif line.strip() and not line.strip().startswith("<!--"):
            pending = None  # other HTML comments (a test's marker) keep the pending marker
        index += 1


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    output = sys.argv[1]
    os.makedirs(output, exist_ok=True)
    for number, markdown in enumerate(sys.argv[2:]):
        path = os.path.abspath(markdown)
        parts = ["import Foundation", "import Realtime", "import RealtimeTesting", ""]
        compiled = 0
        for kind, first, body, reason in blocks(path):
            if kind == "skip":
                print(f"  skipped {markdown}:{first}: {reason}", file=sys.stderr)
                continue
            compiled += 1
            if kind == "declarations":
                parts.append(f'#sourceLocation(file: "{path}", line: {first})')
                parts.extend(body)
                parts.append("#sourceLocation()")
            else:
                # Imports are file-scope: lift them out (the line stays, blank, so numbers still match).
                imports = [line for line in body if IMPORT.match(line)]
                body = ["" if IMPORT.match(line) else line for line in body]
                parts[:0] = imports
                parts.append(f"func snippet{compiled}(session: RealtimeSession, channel: RealtimeChannel) "
                             "async throws {")
                parts.append(f'#sourceLocation(file: "{path}", line: {first})')
                parts.extend(body)
                parts.append("#sourceLocation()")
                parts.append("}")
            parts.append("")
        name = re.sub(r"[^A-Za-z0-9]", "_", os.path.splitext(os.path.basename(markdown))[0])
        target = os.path.join(output, f"Snippets{number}_{name}.swift")
        with open(target, "w", encoding="utf-8") as handle:
            handle.write("\n".join(parts))
        print(f"{target} {compiled}")


if __name__ == "__main__":
    main()
