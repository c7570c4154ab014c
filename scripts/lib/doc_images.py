"""Every image README.md and docs/*.md show exists, with alt text, and every SVG under
docs/images is a self-contained picture: well-formed XML whose root is <svg> with a viewBox of
four numbers (positive width and height), and no scripts, external references or imported fonts
(GitHub shows SVGs through <img>, where none of those would load).

    python3 scripts/lib/doc_images.py            check the repository
    python3 scripts/lib/doc_images.py --self-test show that each rule catches what it should
"""

import pathlib
import re
import sys
import tempfile
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}"
MARKDOWN_IMAGE = re.compile(r"!\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML_IMAGE = re.compile(r"<img\b[^>]*>", re.I)
FENCE = re.compile(r"^\s*(```|~~~)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # http:, https:, data:, file: …


def prose(text):
    """The page without its fenced code blocks (an image in an example is not shown)."""
    lines, inside = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            inside = not inside
            lines.append("")
            continue
        lines.append("" if inside else line)
    return "\n".join(lines)


def page_problems(page, root):
    """Problems with the images `page` shows: missing files, missing alt text."""
    problems = []
    text = prose(page.read_text(encoding="utf-8"))
    found = [(m.group(1), m.group(2)) for m in MARKDOWN_IMAGE.finditer(text)]
    for tag in HTML_IMAGE.findall(text):
        src = re.search(r'\bsrc\s*=\s*"([^"]*)"', tag)
        alt = re.search(r'\balt\s*=\s*"([^"]*)"', tag)
        found.append((alt.group(1) if alt else "", src.group(1) if src else ""))
    name = page.relative_to(root)
    for alt, target in found:
        if not target:
            problems.append(f"{name}: an <img> without src")
            continue
        if not alt.strip():
            problems.append(f"{name}: image {target} has no alt text")
        if EXTERNAL.match(target) or target.startswith("/"):
            problems.append(
                f"{name}: image {target} is not in the repository; use a path relative to the page"
            )
            continue
        path = (page.parent / target.split("#")[0].split("?")[0]).resolve()
        if not path.is_file():
            problems.append(f"{name}: image {target} does not exist ({path})")
    return problems, len(found)


def svg_problems(svg, root):
    """Problems with one SVG file."""
    name = svg.relative_to(root)
    try:
        tree = ET.parse(svg)
    except ET.ParseError as e:
        return [f"{name}: not well-formed XML: {e}"]
    top = tree.getroot()
    problems = []
    if top.tag != SVG + "svg":
        problems.append(f"{name}: the root element is {top.tag}, not an SVG <svg>")
    box = top.get("viewBox", "").replace(",", " ").split()
    try:
        numbers = [float(n) for n in box]
    except ValueError:
        numbers = []
    if len(numbers) != 4 or numbers[2] <= 0 or numbers[3] <= 0:
        problems.append(
            f"{name}: needs a viewBox of four numbers with a positive width and height "
            f"(found {top.get('viewBox')!r})"
        )
    for element in top.iter():
        tag = element.tag.replace(SVG, "")
        if tag in ("script", "foreignObject"):
            problems.append(f"{name}: contains <{tag}>, which GitHub's renderer does not show")
        for attribute in ("href", XLINK + "href"):
            target = element.get(attribute, "")
            if target and not target.startswith("#"):
                problems.append(f"{name}: <{tag}> refers to {target}; keep the picture self-contained")
        if any(k.lower().startswith("on") for k in element.keys()):
            problems.append(f"{name}: <{tag}> has an event handler attribute")
        style = (element.text or "") if tag == "style" else element.get("style", "")
        if re.search(r"@import|@font-face|url\(\s*['\"]?(?!#)", style):
            problems.append(f"{name}: <{tag}> loads something from outside the file ({style.strip()[:60]})")
    return problems


def check(root):
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    pages = [p for p in pages if p.is_file()]
    svgs = sorted((root / "docs" / "images").rglob("*.svg"))
    problems, shown = [], 0
    for page in pages:
        found, count = page_problems(page, root)
        problems += found
        shown += count
    for svg in svgs:
        problems += svg_problems(svg, root)
    return problems, shown, len(pages), len(svgs)


def self_test():
    """Each rule catches a broken example and passes a good one."""
    good_svg = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><defs><marker id="m"/></defs><use href="#m"/></svg>'
    bad_svgs = {
        "unclosed.svg": '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10">',
        "nobox.svg": '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>',
        "flat.svg": '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 0"/>',
        "html.svg": '<html viewBox="0 0 10 10"/>',
        "script.svg": '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1"><script>alert(1)</script></svg>',
        "font.svg": '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1"><style>@import url(https://fonts.example/x.css);</style></svg>',
        "link.svg": '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1"><image href="https://example.com/a.png"/></svg>',
        "onload.svg": '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1" onload="x()"/>',
    }
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        images = root / "docs" / "images"
        images.mkdir(parents=True)
        (images / "good.svg").write_text(good_svg)
        (root / "README.md").write_text(
            "![a picture](docs/images/good.svg)\n\n```md\n![in code](missing.png)\n```\n"
        )
        (root / "docs" / "page.md").write_text(
            '![](images/good.svg)\n![gone](images/gone.png)\n<img src="images/good.svg" alt="ok">\n'
            "![remote](https://example.com/x.png)\n"
        )
        problems, shown, _, _ = check(root)
        expect = ["page.md: image images/good.svg has no alt text", "images/gone.png does not exist",
                  "https://example.com/x.png is not in the repository"]
        for e in expect:
            assert any(e in p for p in problems), (e, problems)
        assert len(problems) == len(expect), problems
        assert shown == 5, shown  # the one inside the code block is not counted
        for name, text in bad_svgs.items():
            (images / name).write_text(text)
            found = svg_problems(images / name, root)
            assert found, f"{name} passed"
            (images / name).unlink()
        assert not svg_problems(images / "good.svg", root)
    print("doc_images.py self-test: every rule catches its broken example")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        sys.exit(0)
    root = pathlib.Path(__file__).resolve().parents[2]
    problems, shown, pages, svgs = check(root)
    for p in problems:
        print(p, file=sys.stderr)
    print(f"{shown} images shown on {pages} pages; {svgs} SVGs under docs/images checked; "
          f"{len(problems)} problems")
    sys.exit(1 if problems else 0)
