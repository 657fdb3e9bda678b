"""WebShop's text mode: a page's visible text nodes joined by ``[SEP]``, and its clickables.

Holds :func:`parse_page`, which reads the shop's HTML with the standard library's parser into a
:class:`PageText`: the visible text elements in document order (scripts, styles and the head
are skipped; whitespace is collapsed), the clickables by lower-cased label (links, and the
buttons of forms without a text field; option values are listed last, as the original does),
and the search bar (a form with a text field), if the page has one. :func:`normalize_label`
is how both the page and an agent's ``click[…]`` argument are compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

__all__ = [
    "INSTRUCTION_LINE",
    "SEP",
    "Clickable",
    "PageText",
    "SearchBar",
    "agent_view",
    "normalize_label",
    "parse_page",
    "without_instruction",
]

SEP = " [SEP] "
INSTRUCTION_LINE = "Instruction: "
"""How the agent view's first line starts (:func:`agent_view`)."""
_SKIPPED = frozenset({"script", "style", "head", "title", "noscript", "template"})


def normalize_label(text: str) -> str:
    """Lower-case with runs of whitespace made one space (how clickables are compared)."""
    return " ".join(text.split()).lower()


def agent_view(instruction: str, elements: list[str]) -> str:
    """The page as the env's ``agent`` observation: the line ``Instruction: <instruction>``,
    so that a bare env shows its task, then the elements after the instruction, each quoted, as
    the agent codebases show the page.

    >>> agent_view("buy a rug", ["WebShop", "Instruction:", "buy a rug", "Search"])
    "Instruction: buy a rug\\n'Search'"
    """
    instruction = " ".join(instruction.split())
    if instruction in elements:
        elements = elements[elements.index(instruction) + 1 :]
    return f"{INSTRUCTION_LINE}{instruction}\n" + SEP.join(f"'{e}'" for e in elements)


def without_instruction(observation: str) -> str:
    """An :func:`agent_view` without its instruction line: the page as the study's prompt shows
    it (its template states the task in its own words).

    >>> without_instruction("Instruction: buy a rug\\n'Search'")
    "'Search'"
    """
    head, newline, page = observation.partition("\n")
    return page if newline and head.startswith(INSTRUCTION_LINE) else observation


@dataclass(frozen=True)
class Clickable:
    """A link or button: the request that clicking it makes."""

    label: str
    method: str
    url: str
    fields: tuple[tuple[str, str], ...] = ()
    option: bool = False


@dataclass(frozen=True)
class SearchBar:
    """A form with a text field: searching submits ``field`` = query with the other fields;
    ``buttons`` are its buttons' labels (the original's text env lists them as clickables)."""

    method: str
    url: str
    field: str
    fields: tuple[tuple[str, str], ...] = ()
    buttons: tuple[str, ...] = ()


@dataclass
class PageText:
    """One page in text mode."""

    elements: list[str] = field(default_factory=list)
    clickables: dict[str, Clickable] = field(default_factory=dict)
    search_bar: SearchBar | None = None

    @property
    def text(self) -> str:
        """The elements joined by ``" [SEP] "`` (WebShop's text observation)."""
        return SEP.join(self.elements)


@dataclass
class _Form:
    method: str
    url: str
    fields: list[tuple[str, str]] = field(default_factory=list)
    text_field: str | None = None
    buttons: list[str] = field(default_factory=list)


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[str] = []
        self.links: list[Clickable] = []
        self.search_bar: SearchBar | None = None
        self._skip = 0
        self._link: tuple[str, bool] | None = None
        self._link_text: list[str] = []
        self._form: _Form | None = None
        self._button: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = {k: v or "" for k, v in attrs}
        if tag in _SKIPPED:
            self._skip += 1
        elif tag == "a" and "href" in attr:
            self._link, self._link_text = (attr["href"], "data-option" in attr), []
        elif tag == "form":
            self._form = _Form(attr.get("method", "get").upper(), attr.get("action", ""))
        elif tag == "input" and self._form is not None and attr.get("name"):
            if attr.get("type", "text") in ("text", "search"):
                self._form.text_field = attr["name"]
            elif attr.get("type") == "hidden":
                self._form.fields.append((attr["name"], attr.get("value", "")))
        elif tag == "button" and self._form is not None:
            self._button = []

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self._skip = max(0, self._skip - 1)
        elif tag == "a" and self._link is not None:
            label = normalize_label(" ".join(self._link_text))
            if label:
                self.links.append(Clickable(label, "GET", self._link[0], option=self._link[1]))
            self._link = None
        elif tag == "button" and self._form is not None and self._button is not None:
            self._form.buttons.append(normalize_label(" ".join(self._button)))
            self._button = None
        elif tag == "form" and self._form is not None:
            form, self._form = self._form, None
            if form.text_field is not None:
                self.search_bar = SearchBar(
                    form.method, form.url, form.text_field, tuple(form.fields),
                    tuple(filter(None, form.buttons)),
                )
            else:
                for label in filter(None, form.buttons):
                    self.links.append(Clickable(label, form.method, form.url, tuple(form.fields)))

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        text = " ".join(data.split())
        if not text:
            return
        self.elements.append(text)
        if self._link is not None:
            self._link_text.append(text)
        if self._button is not None:
            self._button.append(text)


def parse_page(html: str) -> PageText:
    """The text-mode view of a shop page.

    >>> page = parse_page('<h1>Hi</h1><a href="/x">Next &gt;</a><a data-option href="/y">Red</a>')
    >>> page.text, list(page.clickables)
    ('Hi [SEP] Next > [SEP] Red', ['next >', 'red'])
    """
    parser = _Parser()
    parser.feed(html)
    parser.close()
    clickables: dict[str, Clickable] = {}
    for link in sorted(parser.links, key=lambda c: c.option):  # stable: options go last
        clickables.setdefault(link.label, link)
    return PageText(parser.elements, clickables, parser.search_bar)
