"""What a saved query's SQL does, found by parsing it with sqlglot (SQLite or PostgreSQL).

A body holds one or more statements separated by ``;``: SELECT (with set operations),
INSERT, UPDATE or DELETE, each with CTEs. Anything else (DDL, PRAGMA, transaction control,
ATTACH, COPY, MERGE, SELECT INTO...) is refused. Parameters are written ``:name`` and always
bound, never formatted into the text; other placeholder styles (``?``, ``$1``, ``@x``,
``%(x)s``) are refused so that a body means the same on both databases.

The analysis finds every table a statement may write, wherever the DML sits (a data-modifying
CTE included). Each statement keeps its original text; for psycopg, whose placeholders are
``%(name)s``, the text is rewritten at the token positions sqlglot found (and ``%`` doubled).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from enum import Enum

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokenizer_core import Token, TokenType

from dgxmm.errors import DefinitionError
from dgxmm.store.database import Dialect

__all__ = ["Analysis", "Statement", "StatementKind", "analyze", "table_key"]


class StatementKind(Enum):
    """The statements a saved query may hold."""

    SELECT = "select"
    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"


_KINDS: dict[type[exp.Expr], StatementKind] = {
    exp.Select: StatementKind.SELECT,
    exp.Union: StatementKind.SELECT,
    exp.Intersect: StatementKind.SELECT,
    exp.Except: StatementKind.SELECT,
    exp.Insert: StatementKind.INSERT,
    exp.Update: StatementKind.UPDATE,
    exp.Delete: StatementKind.DELETE,
}
_DML = (exp.Insert, exp.Update, exp.Delete)
# Nodes that do something besides reading and writing rows, wherever they appear.
_REFUSED_INSIDE = (exp.Into, exp.Command, exp.Create, exp.Drop, exp.Alter, exp.Merge)


@dataclass(frozen=True, slots=True, kw_only=True)
class Statement:
    """One statement of a body: its text, what it is, and where its parameters sit."""

    text: str
    kind: StatementKind
    writes: frozenset[str]
    params: tuple[str, ...]  # in order of appearance, repeats included
    spans: tuple[tuple[int, int, str], ...]  # (start, end exclusive, name) of each ``:name``

    @property
    def is_read_only(self) -> bool:
        """Tell whether the statement writes nothing (no DML anywhere in it)."""
        return not self.writes

    def driver_text(self, dialect: Dialect) -> str:
        """Return the text for the driver: as written for SQLite, ``%(name)s`` for psycopg."""
        if dialect is Dialect.SQLITE:
            return self.text
        parts: list[str] = []
        last = 0
        for start, end, name in self.spans:
            parts.append(self.text[last:start].replace("%", "%%"))
            parts.append(f"%({name})s")
            last = end
        parts.append(self.text[last:].replace("%", "%%"))
        return "".join(parts)


@dataclass(frozen=True, slots=True, kw_only=True)
class Analysis:
    """A parsed body: its statements, the tables it may write, the parameters it uses."""

    statements: tuple[Statement, ...]

    @property
    def writes(self) -> frozenset[str]:
        """Every table any statement may write (normalized by ``table_key``)."""
        return frozenset().union(*(s.writes for s in self.statements))

    @property
    def params(self) -> frozenset[str]:
        """The names of the parameters the body uses."""
        return frozenset(name for s in self.statements for name in s.params)


def analyze(body: str, dialect: Dialect) -> Analysis:
    """Parse ``body`` for ``dialect``; raise ``DefinitionError('body', ...)`` when refused."""
    if not isinstance(body, str) or not body.strip():
        raise DefinitionError("body", "a saved query needs SQL")
    try:
        return _analyze(body, dialect)
    except RecursionError:
        # sqlglot parses recursively, a few frames per level: about 40 nested parentheses or
        # subqueries reach Python's limit. Raising the limit would not be safe on a thread.
        raise DefinitionError(
            "body", "the SQL nests too deeply to be parsed; flatten its parentheses or subqueries"
        ) from None


@functools.lru_cache(maxsize=512)
def _analyze(body: str, dialect: Dialect) -> Analysis:
    """Parse once per body: every run of a job analyzes its query again (it may have changed)."""
    try:
        tokens = sqlglot.tokenize(body, read=dialect.sqlglot)
    except TokenError as error:
        raise DefinitionError("body", f"the SQL does not parse: {error}") from error
    statements = []
    for number, (start, chunk) in enumerate(_split(body, tokens), start=1):
        statements.append(_statement(body, start, chunk, number, dialect))
    if not statements:
        raise DefinitionError("body", "a saved query needs at least one statement")
    return Analysis(statements=tuple(statements))


def table_key(name: str, schema: str | None, *, quoted: bool, dialect: Dialect) -> str:
    """Return a table's name as effects and checks compare it.

    SQLite compares names case-insensitively; PostgreSQL folds unquoted names to lower case.
    The default schema (``main`` / ``public``) is left out.
    """
    if dialect is Dialect.SQLITE:
        key = name.lower()
        space = (schema or "main").lower()
        return key if space == "main" else f"{space}.{key}"
    key = name if quoted else name.lower()
    if schema is None or schema.lower() == "public":
        return key
    return f"{schema}.{key}"


def _split(body: str, tokens: list[Token]) -> list[tuple[int, list[Token]]]:
    """Split the tokens at ``;``; return each statement's start offset and tokens."""
    chunks: list[tuple[int, list[Token]]] = []
    current: list[Token] = []
    for token in tokens:
        if token.token_type is TokenType.SEMICOLON:
            if current:
                chunks.append((current[0].start, current))
            current = []
        else:
            current.append(token)
    if current:
        chunks.append((current[0].start, current))
    return chunks


def _statement(
    body: str, start: int, tokens: list[Token], number: int, dialect: Dialect
) -> Statement:
    end = tokens[-1].end + 1
    text = body[start:end]
    where = f"statement {number}"
    _refuse_other_placeholders(tokens, where, dialect)
    _refuse_keyword_parameters(tokens, where)
    try:
        parsed = sqlglot.parse(text, read=dialect.sqlglot)
    except (ParseError, TokenError) as error:
        raise DefinitionError("body", f"{where} does not parse: {_first_line(error)}") from error
    trees = [tree for tree in parsed if tree is not None]
    if len(trees) != 1:
        raise DefinitionError("body", f"{where} does not parse as one statement")
    tree = trees[0]
    kind = _KINDS.get(type(tree))
    if kind is None:
        raise DefinitionError(
            "body",
            f"{where} is {_describe(tree)}; a saved query holds only SELECT, INSERT, UPDATE "
            "and DELETE statements",
        )
    for node in tree.walk():
        if isinstance(node, _REFUSED_INSIDE):
            raise DefinitionError(
                "body", f"{where} holds {_describe(node)}, which a saved query may not do"
            )
    writes = frozenset(_target(node, where, dialect) for node in tree.find_all(*_DML))
    if tree.find(exp.Parameter) is not None:
        raise DefinitionError("body", f"{where}: use named parameters (:name), not $1 or @x")
    names = [node.this for node in tree.find_all(exp.Placeholder)]
    if any(not isinstance(name, str) or not name for name in names):
        raise DefinitionError("body", f"{where}: use named parameters (:name), not '?'")
    spans = _spans(tokens, start, set(names), where)
    if len(spans) != len(names):
        raise DefinitionError(
            "body", f"{where}: cannot tell its :parameters apart from other uses of ':'"
        )
    return Statement(
        text=text,
        kind=kind,
        writes=writes,
        params=tuple(name for _, _, name in spans),
        spans=spans,
    )


def _refuse_other_placeholders(tokens: list[Token], where: str, dialect: Dialect) -> None:
    """Refuse SQLite's other binding styles, which sqlite3 would bind (or fail to) by itself."""
    if dialect is not Dialect.SQLITE:
        return  # psycopg binds only what we rewrite; '?' is a jsonb operator there
    for token in tokens:
        bad = token.token_type is TokenType.PARAMETER or (
            token.token_type is TokenType.PLACEHOLDER and token.text != ":"
        )
        if token.token_type is TokenType.VAR and token.text[:1] in ("$", "@", "?"):
            bad = True
        if bad:
            raise DefinitionError(
                "body", f"{where}: use named parameters (:name), not {token.text!r}"
            )


def _refuse_keyword_parameters(tokens: list[Token], where: str) -> None:
    for colon, following in itertools.pairwise(tokens):
        is_keyword = following.token_type not in (TokenType.VAR, TokenType.NUMBER)
        if (
            colon.token_type is TokenType.COLON
            and following.start == colon.end + 1
            and is_keyword
            and following.text.isidentifier()
        ):
            raise DefinitionError(
                "body",
                f"{where}: :{following.text} cannot be a parameter: "
                f"{following.text.upper()} is an SQL keyword (name it otherwise)",
            )


def _spans(
    tokens: list[Token], offset: int, names: set[str], where: str
) -> tuple[tuple[int, int, str], ...]:
    spans = []
    for colon, following in itertools.pairwise(tokens):
        if colon.token_type is not TokenType.COLON or following.start != colon.end + 1:
            continue
        if following.text in names:
            spans.append((colon.start - offset, following.end + 1 - offset, following.text))
    return tuple(spans)


def _target(node: exp.Expr, where: str, dialect: Dialect) -> str:
    table = node.this
    if isinstance(table, exp.Schema):
        table = table.this
    if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier):
        raise DefinitionError("body", f"{where}: cannot tell which table it writes")
    return table_key(table.name, table.db or None, quoted=bool(table.this.quoted), dialect=dialect)


def _describe(node: exp.Expr) -> str:
    if isinstance(node, exp.Command):
        return f"{str(node.this).upper()} (a command)"
    if isinstance(node, exp.Into):
        return "SELECT ... INTO (creates a table)"
    name = type(node).__name__
    return {"TruncateTable": "TRUNCATE"}.get(name, name.upper())


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
