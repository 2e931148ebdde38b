"""What a saved query writes, found by parsing its SQL (both dialects), and its parameters."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlglot.dialects.dialect import Dialect as Dialect_
from sqlglot.tokens import TokenType  # type: ignore[attr-defined]

from dgxmm.errors import DefinitionError
from dgxmm.store import Dialect, StatementKind, analyze

BOTH = pytest.mark.parametrize("dialect", list(Dialect), ids=lambda d: d.value)


@BOTH
@pytest.mark.parametrize(
    ("body", "writes"),
    [
        pytest.param("SELECT * FROM items", set(), id="select"),
        pytest.param("INSERT INTO items (label) VALUES ('a')", {"items"}, id="insert"),
        pytest.param("UPDATE Items SET n = 1", {"items"}, id="update-case"),
        pytest.param("DELETE FROM items WHERE id IN (SELECT id FROM old)", {"items"}, id="delete"),
        pytest.param(
            "WITH d AS (DELETE FROM a RETURNING *) INSERT INTO b SELECT * FROM d",
            {"a", "b"},
            id="dml-in-cte",
        ),
        pytest.param("SELECT 1; UPDATE x SET y = 2; DELETE FROM z", {"x", "z"}, id="several"),
        pytest.param("SELECT 1 UNION SELECT 2", set(), id="union"),
    ],
)
def test_it_finds_every_table_a_body_may_write(
    dialect: Dialect, body: str, writes: set[str]
) -> None:
    assert analyze(body, dialect).writes == writes


def test_it_keeps_quoted_names_on_postgresql_and_folds_them_on_sqlite() -> None:
    body = 'UPDATE "Items" SET n = 1'
    assert analyze(body, Dialect.POSTGRESQL).writes == {"Items"}
    assert analyze(body, Dialect.SQLITE).writes == {"items"}
    assert analyze("DELETE FROM audit.log", Dialect.POSTGRESQL).writes == {"audit.log"}
    assert analyze("DELETE FROM public.log", Dialect.POSTGRESQL).writes == {"log"}


@BOTH
def test_it_rewrites_parameters_for_the_driver_and_leaves_strings_alone(dialect: Dialect) -> None:
    analysis = analyze("SELECT ':x', '100%' FROM t WHERE a = :x AND b = :y -- :z", dialect)
    (statement,) = analysis.statements
    assert analysis.params == {"x", "y"}
    assert statement.kind is StatementKind.SELECT
    expected = {
        Dialect.SQLITE: "SELECT ':x', '100%' FROM t WHERE a = :x AND b = :y",
        Dialect.POSTGRESQL: "SELECT ':x', '100%%' FROM t WHERE a = %(x)s AND b = %(y)s",
    }[dialect]
    assert statement.driver_text(dialect) == expected


def test_it_reads_a_postgresql_cast_as_a_cast_not_a_parameter() -> None:
    analysis = analyze("SELECT a::text FROM t WHERE b = :b", Dialect.POSTGRESQL)
    assert analysis.params == {"b"}
    assert analysis.statements[0].driver_text(Dialect.POSTGRESQL) == (
        "SELECT a::text FROM t WHERE b = %(b)s"
    )


@BOTH
@pytest.mark.parametrize(
    "body",
    ["SELECT $1", "SELECT ?", "SELECT * FROM t WHERE a = @p"],
    ids=["dollar", "qmark", "at"],
)
def test_it_refuses_other_placeholder_styles(dialect: Dialect, body: str) -> None:
    with pytest.raises(DefinitionError, match="named parameters"):
        analyze(body, dialect)


def _keyword(name: str) -> bool:
    """Tell whether a dialect's tokenizer reads the name as a keyword (the analysis refuses it)."""
    return any(
        token.token_type not in (TokenType.VAR, TokenType.NUMBER)
        for dialect in ("sqlite", "postgres")
        for token in Dialect_.get_or_raise(dialect).tokenize(name)
    )


# Parameter names the analysis must find; SQL keywords (INT, KEY...) are refused on purpose.
names = st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True).filter(lambda n: not _keyword(n))


@BOTH
@given(params=st.lists(names, min_size=1, max_size=5, unique=True))
def test_it_finds_exactly_the_parameters_a_body_uses(dialect: Dialect, params: list[str]) -> None:
    conditions = " AND ".join(f"c{i} = :{name}" for i, name in enumerate(params))
    analysis = analyze(f"SELECT * FROM t WHERE {conditions}", dialect)
    assert analysis.params == set(params)
    assert list(analysis.statements[0].params) == params


SQLISH = st.lists(
    st.sampled_from(
        [
            *"SELECT FROM WHERE;:'\"()$?@%*,=-/\n x1_",
            "SELECT ",
            "FROM ",
            "INSERT INTO ",
            "UPDATE ",
            " SET ",
            "DELETE ",
            "WITH ",
            " AS ",
            ":a",
            "::",
            "--",
            "/*",
            "*/",
            "[",
            "]",
        ]
    ),
    max_size=30,
).map("".join)


@BOTH
@given(text=st.one_of(st.text(max_size=60), SQLISH))
def test_it_either_accepts_a_body_or_refuses_it_as_a_definition_error(
    dialect: Dialect, text: str
) -> None:
    field = None
    try:
        analysis = analyze(text, dialect)
    except DefinitionError as error:
        field = error.field
    else:
        assert analysis.statements
    assert field in (None, "body")
